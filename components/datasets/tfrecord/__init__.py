"""Existing tf.train.Example TFRecord files: a tabular classification or regression task on their features."""

from kflow.components.datasets.tabular.dataset import tabular_dataset

DATASET = tabular_dataset(
    "tfrecord", "kflow.components.datasets.tfrecord.ingest:TfRecordIngest", {"key": "key", "split_files": "split_files"}
)
