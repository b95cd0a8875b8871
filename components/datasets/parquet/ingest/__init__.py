from kflow.components.datasets.parquet.ingest.component import ParquetIngest

__all__ = ["ParquetIngest"]
