"""A TensorFlow Datasets dataset of scalar features: a tabular classification or regression task."""

from kflow.components.datasets.bundle import Dataset
from kflow.components.datasets.csv import DATASET as CSV

DATASET = Dataset(
    name="tfds",
    ingest="kflow.components.datasets.tfds.ingest:TfdsIngest",
    schema=None,
    task=CSV.task,
    metrics=CSV.metrics,
    source_test_split=True,
    validates_data=True,
    data_fields={"label": "label", "problem_type": "problem_type", "tfds": "tfds"},
    backend_limits=CSV.backend_limits,
)
