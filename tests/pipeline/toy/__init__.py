"""Tiny components for testing runners: real files, real Beam, no TensorFlow."""
