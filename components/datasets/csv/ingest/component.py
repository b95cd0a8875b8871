"""The CSV ingest component (CsvExampleGen-like): CSV files in, typed TFRecord Examples, a Schema and rejects out.

Any CSV, streamed: one file, a folder of `*.csv`/`*.csv.gz` files or a glob pattern (sorted by
name, every file with the same header); column types declared or inferred from a sample; one
column is the label of a `classification` or `regression` task. The schema it writes tags the
label (`role=label`, `task=...`), so the Trainer and the Evaluator need nothing else.
"""

from __future__ import annotations

from typing import Any

from kflow.components.ingest.ingest_spec import INGEST_OUTPUTS, ingest_parameters
from kflow.pipeline.dsl.component import Component, ComponentSpec, Parameter


class CsvIngest(Component):
    spec = ComponentSpec(
        inputs={},
        outputs=INGEST_OUTPUTS,
        parameters=ingest_parameters(
            source_path=Parameter(
                str, is_path=True, description="A CSV file (plain or gzipped), a folder of them, or a glob pattern."
            ),
            source_format=Parameter(str, default="auto", description="auto | csv (the same: files are CSV)."),
            label=Parameter(
                str,
                optional=True,
                description="The column to predict; null: data to score (`kflow predict`): no label column, every "
                "record kept, each keyed by its key column or its `FILE:LINE` (the `__source_row__` feature).",
            ),
            problem_type=Parameter(
                str,
                optional=True,
                description="classification | regression; unset: inferred from the label (decimals: regression; "
                "strings, booleans, up to 20 whole numbers: classification; more: refused, asking).",
            ),
            key=Parameter(
                str,
                optional=True,
                description="A column with a unique record key: the split hashes it; repeats are rejected. "
                "Without one, the split hashes each record's content.",
            ),
            columns=Parameter(
                dict, default={}, description="{column: int | float | string | bool}; others are inferred."
            ),
            csv_format=Parameter(
                dict,
                default={},
                description="{delimiter: ',', quotechar: '\"' (null: none), header: true | [names], "
                "missing_values: ['', 'NA', 'NaN', 'null', ...]}",
            ),
            infer_rows=Parameter(int, default=10_000, description="Records sampled to infer undeclared types."),
            split=Parameter(
                dict,
                default={"train": 8, "eval": 1, "test": 1},
                description="Shares of the records per split (per label for classification).",
            ),
            max_records=Parameter(int, optional=True, description="Read at most this many records."),
        ),
        executor="kflow.components.datasets.csv.ingest.executor:run",
        renamed_parameters={"task": "problem_type"},
        source_files="kflow.components.datasets.csv.ingest.source:source_files",
    )

    def check_parameters(self) -> list[str]:
        try:
            self.inspect_source()
        except (ValueError, OSError) as error:
            return [str(error)]
        return []

    def inspect_source(self) -> Any:
        """The source's facts (tabular.columns.SourceFacts) from its first file's header and sample; ValueError
        naming the field for what the ingest would refuse (a missing file, label or column, a task)."""
        from kflow.components.datasets.csv.ingest.source import inspect_source

        return inspect_source(**self.parameters)
