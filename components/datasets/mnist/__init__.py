"""MNIST handwritten digits: 28×28 grey images, ten classes; the source brings its own test split."""

from kflow.components.datasets.bundle import Dataset

DATASET = Dataset.in_package(__name__, "Mnist")
