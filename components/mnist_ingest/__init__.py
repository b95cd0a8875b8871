"""The MNIST ingest component (ExampleGen-like)."""

from components.mnist_ingest.component import MnistIngest

__all__ = ["MnistIngest"]
