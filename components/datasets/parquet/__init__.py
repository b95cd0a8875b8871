"""Any Parquet file(s): a tabular classification or regression task on the columns, the label named in the config."""

from kflow.components.datasets.tabular.dataset import tabular_dataset

DATASET = tabular_dataset(
    "parquet",
    "kflow.components.datasets.parquet.ingest:ParquetIngest",
    {"key": "key", "columns": "columns", "infer_rows": "infer_rows"},
)
