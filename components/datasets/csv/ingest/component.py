"""The CSV ingest component (CsvExampleGen-like): CSV files in, typed TFRecord Examples, a Schema and rejects out.

Any CSV, streamed: one file, a folder of `*.csv`/`*.csv.gz` files or a glob pattern (sorted by
name, every file with the same header), or JSON Lines (json_lines.py: an object a line, its keys the
columns), a JSON array of objects (json_array.py) or an Excel workbook's first sheet (workbook.py);
column types declared or inferred from a sample; one
column is the label of a `classification` or `regression` task. The schema it writes tags the
label (`role=label`, `task=...`), so the Trainer and the Evaluator need nothing else.
"""

from __future__ import annotations

from kflow.components.datasets.tabular.table_spec import InspectedTableIngest, column_parameters, table_ingest_spec
from kflow.pipeline.dsl.component import Parameter


class CsvIngest(InspectedTableIngest):
    spec = table_ingest_spec(
        "csv",
        source="A CSV, JSON Lines, JSON array or Excel workbook (plain or compressed), a folder of them, or a glob "
        "pattern.",
        formats="auto | csv | jsonl (JSON records: an object a line, or an array of objects, their keys the columns; "
        "auto: files that open a JSON object or an array of them are JSON, others CSV).",
        reading=column_parameters(
            "FILE:LINE",
            "content",
            columns="{column: int | float | string | bool}; others are inferred.",
            infer_rows="Records sampled to infer undeclared types.",
            csv_format=Parameter(
                dict,
                default={},
                description="{delimiter: ',', quotechar: '\"' (null: none), header: true | [names], "
                "missing_values: ['', 'NA', 'NaN', 'null', ...], encoding: utf-8, decimal: '.' | ','}",
            ),
        ),
        source_files="kflow.components.datasets.csv.ingest.source:source_files",
    )
    inspect = "kflow.components.datasets.csv.ingest.source:inspect_source"
    header_only = "kflow.components.datasets.csv.ingest.header_only:source_columns"
