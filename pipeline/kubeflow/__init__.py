"""Talking to a Kubeflow cluster: submitting runs, training as a Trainer v2 TrainJob (or a TFJob), manifests."""
