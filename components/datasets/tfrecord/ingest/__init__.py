from kflow.components.datasets.tfrecord.ingest.component import TfRecordIngest

__all__ = ["TfRecordIngest"]
