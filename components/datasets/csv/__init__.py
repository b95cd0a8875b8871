"""Any CSV or JSON Lines file: a tabular classification or regression task on the columns, the label named in the
config."""

from kflow.components.datasets.tabular.dataset import tabular_dataset

DATASET = tabular_dataset(
    "csv",
    "kflow.components.datasets.csv.ingest:CsvIngest",
    {"key": "key", "columns": "columns", "csv": "csv_format", "infer_rows": "infer_rows"},
)
