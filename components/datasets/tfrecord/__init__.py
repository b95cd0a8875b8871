"""Existing tf.train.Example TFRecord files: a tabular classification or regression task on their features."""

from kflow.components.datasets.bundle import Dataset
from kflow.components.datasets.csv import DATASET as CSV

DATASET = Dataset(
    name="tfrecord",
    ingest="kflow.components.datasets.tfrecord.ingest:TfRecordIngest",
    schema=None,
    task=CSV.task,
    metrics=CSV.metrics,
    source_test_split=False,
    validates_data=True,
    required_data_fields=("label",),
    data_fields={"label": "label", "problem_type": "problem_type", "key": "key", "split_files": "split_files"},
    backend_limits=CSV.backend_limits,
)
