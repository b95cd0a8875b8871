from kflow.components.datasets.tfds.ingest.component import TfdsIngest

__all__ = ["TfdsIngest"]
