"""The Parquet ingest component: Parquet files in, typed TFRecord Examples, a Schema and rejects out.

Beside the CSV ingest, with the same task, checks and split: the column types come from the file's own
schema (a `data.columns` entry converts one), and the files are streamed a row group at a time.
"""

from __future__ import annotations

from typing import Any

from kflow.components.ingest.ingest_spec import INGEST_OUTPUTS, ingest_parameters
from kflow.pipeline.dsl.component import Component, ComponentSpec, Parameter


class ParquetIngest(Component):
    spec = ComponentSpec(
        inputs={},
        outputs=INGEST_OUTPUTS,
        parameters=ingest_parameters(
            source_path=Parameter(
                str, is_path=True, description="A Parquet file, a folder of *.parquet files, or a glob pattern."
            ),
            source_format=Parameter(str, default="auto", description="auto | parquet (the same)."),
            label=Parameter(
                str,
                optional=True,
                description="The column to predict; null: data to score (`kflow predict`): no label column, every "
                "record kept, each keyed by its key column or its `FILE#ROW` (the `__source_row__` feature).",
            ),
            problem_type=Parameter(
                str,
                optional=True,
                description="classification | regression; unset: inferred from the label as for csv.",
            ),
            key=Parameter(
                str,
                optional=True,
                description="A column with a unique record key: the split hashes it; repeats are rejected. "
                "Without one, the split hashes each record's values.",
            ),
            columns=Parameter(
                dict,
                default={},
                description="{column: int | float | string | bool}: converts a column from its Parquet type.",
            ),
            infer_rows=Parameter(int, default=10_000, description="Label values sampled to infer data.problem_type."),
            split=Parameter(
                dict,
                default={"train": 8, "eval": 1, "test": 1},
                description="Shares of the records per split (per label for classification).",
            ),
            max_records=Parameter(int, optional=True, description="Read at most this many records."),
        ),
        executor="kflow.components.datasets.parquet.ingest.executor:run",
        renamed_parameters={"task": "problem_type"},
        source_files="kflow.components.datasets.parquet.ingest.source:source_files",
    )

    def check_parameters(self) -> list[str]:
        try:
            self.inspect_source()
        except (ValueError, OSError) as error:
            return [str(error)]
        return []

    def inspect_source(self) -> Any:
        """The source's facts (tabular.columns.SourceFacts) from the files' schemas and a sample of the label."""
        from kflow.components.datasets.parquet.ingest.source import inspect_source

        return inspect_source(**self.parameters)
