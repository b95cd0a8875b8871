"""Any CSV: a tabular classification or regression task on the columns, the label named in the config."""

from kflow.components.datasets.bundle import Dataset

DATASET = Dataset(
    name="csv",
    ingest="kflow.components.datasets.csv.ingest:CsvIngest",
    schema=None,
    task="kflow.components.datasets.tabular.task:TabularTask",
    metrics="kflow.components.datasets.tabular.metrics:TabularMetrics",
    source_test_split=False,
    validates_data=True,
    required_data_fields=("label",),
    data_fields={
        "label": "label",
        "problem_type": "problem_type",
        "key": "key",
        "columns": "columns",
        "csv": "csv_format",
        "infer_rows": "infer_rows",
    },
    backend_limits={
        "jax": "its model takes raw feature values, strings included (the lookups are inside the model, so the "
        "served model reads raw values), and JAX arrays hold no strings; train it under a TensorFlow strategy"
    },
)
