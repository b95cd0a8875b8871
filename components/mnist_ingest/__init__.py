"""The MNIST ingest component (ExampleGen-like)."""

from kflow.components.mnist_ingest.component import MnistIngest

__all__ = ["MnistIngest"]
