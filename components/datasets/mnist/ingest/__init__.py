"""The MNIST ingest component (ExampleGen-like)."""

from kflow.components.datasets.mnist.ingest.component import MnistIngest

__all__ = ["MnistIngest"]
