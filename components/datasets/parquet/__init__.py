"""Any Parquet file(s): a tabular classification or regression task on the columns, the label named in the config."""

from kflow.components.datasets.bundle import Dataset
from kflow.components.datasets.csv import DATASET as CSV

DATASET = Dataset(
    name="parquet",
    ingest="kflow.components.datasets.parquet.ingest:ParquetIngest",
    schema=None,
    task=CSV.task,
    metrics=CSV.metrics,
    source_test_split=False,
    validates_data=True,
    required_data_fields=("label",),
    data_fields={
        "label": "label",
        "problem_type": "problem_type",
        "key": "key",
        "columns": "columns",
        "infer_rows": "infer_rows",
    },
    backend_limits=CSV.backend_limits,
)
