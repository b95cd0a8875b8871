"""The Parquet ingest component: Parquet files in, typed TFRecord Examples, a Schema and rejects out.

Beside the CSV ingest, with the same task, checks and split: the column types come from the file's own
schema (a `data.columns` entry converts one), and the files are streamed a row group at a time.
"""

from __future__ import annotations

from kflow.components.datasets.tabular.table_spec import InspectedTableIngest, column_parameters, table_ingest_spec


class ParquetIngest(InspectedTableIngest):
    spec = table_ingest_spec(
        "parquet",
        source="A Parquet file, a folder of *.parquet files, or a glob pattern.",
        reading=column_parameters(
            "FILE#ROW",
            "values",
            columns="{column: int | float | string | bool}: converts a column from its Parquet type.",
            infer_rows="Label values sampled to infer data.problem_type.",
        ),
        source_files="kflow.components.datasets.parquet.ingest.source:source_files",
    )
    inspect = "kflow.components.datasets.parquet.ingest.source:inspect_source"
    header_only = "kflow.components.datasets.parquet.ingest.source:source_columns"
