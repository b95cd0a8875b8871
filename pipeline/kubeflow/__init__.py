"""Talking to a Kubeflow cluster: run submission and multi-worker training as a TFJob."""
