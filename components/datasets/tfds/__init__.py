"""A TensorFlow Datasets dataset of scalar features: a tabular classification or regression task."""

from kflow.components.datasets.tabular.dataset import tabular_dataset

DATASET = tabular_dataset(
    "tfds",
    "kflow.components.datasets.tfds.ingest:TfdsIngest",
    {"tfds": "tfds"},
    source_test_split=True,
    label_required=False,
)
