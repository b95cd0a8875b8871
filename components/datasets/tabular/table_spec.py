"""The spec the tabular ingests (csv, parquet, tfrecord, tfds) share: one declaration, a reader's own parameters
added; the label, problem type, key and split parameters said once, in the words of each format ("column" or
"feature", and how it names a record's position)."""

from __future__ import annotations

from typing import Any

from kflow.components.datasets.bundle import SPLIT_WITH_TEST
from kflow.components.datasets.tabular.dataset import INFER_ROWS
from kflow.components.ingest.ingest_spec import ingest_component_spec, split_shares
from kflow.pipeline.dsl.component import Component, ComponentSpec, Parameter, import_path

# csv and parquet infer the problem type from the label; tfrecord and tfds take it as declared.
INFERRED_PROBLEM_TYPE = "inferred"


def table_ingest_spec(
    dataset: str,
    *,
    source: str,
    reading: dict[str, Parameter],
    source_files: str,
    formats: str | None = None,
    split: Parameter | None = None,
    records: str = "records",
    source_optional: bool = False,
) -> ComponentSpec:
    """The spec of the `dataset`'s ingest (its executor: `<dataset>.ingest.executor:run`): `source`, what
    `source_path` may be; `reading`, its own parameters (label, problem_type, … from `label_parameters`);
    `formats`, `source_format`'s description (default: auto or the dataset's name, the same); `split`, its split
    parameter (default: shares of SPLIT_WITH_TEST); `source_files`, "module:function" listing the files it reads."""
    return ingest_component_spec(
        dataset,
        source_files=source_files,
        renamed_parameters={"task": "problem_type"},
        source=source,
        source_optional=source_optional,
        formats=formats or f"auto | {dataset} (the same).",
        reading=reading,
        split=split or split_shares(SPLIT_WITH_TEST, "Shares of the records per split (per label for classification)."),
        records=records,
    )


def label_parameters(
    *, thing: str, position: str | None, problem_type: str, key_hashes: str | None = "", **own: Parameter
) -> dict[str, Parameter]:
    """`label`, `problem_type` and (unless `key_hashes` is None) `key` of a table whose fields are `thing`s
    ("column", "feature"), then its `own` parameters: a record without a label (data to score) is named by
    `position` (its `__source_row__` feature; None: the source names the label); the problem type is
    INFERRED_PROBLEM_TYPE from the label, else "classification" unless given; without a key the split hashes
    each record's `key_hashes` ("": no more is said)."""
    if position is None:
        label = Parameter(str, optional=True, description=f"The {thing} to predict (default: the supervised label).")
    else:
        unlabelled = "no label column" if thing == "column" else "no label"
        label = Parameter(
            str,
            optional=True,
            description=f"The {thing} to predict; null: data to score (`kflow predict`): {unlabelled}, every record "
            f"kept, each keyed by its key {thing} or its `{position}` (the `__source_row__` feature).",
        )
    parameters = {"label": label, "problem_type": _problem_type(problem_type)}
    if key_hashes is not None:
        unique = f"A {thing} with a unique record key"
        parameters["key"] = Parameter(
            str,
            optional=True,
            description=f"{unique}: the split hashes it; repeats are rejected. Without one, the split hashes each "
            f"record's {key_hashes}."
            if key_hashes
            else f"{unique}; repeats are rejected.",
        )
    return {**parameters, **own}


def _problem_type(problem_type: str) -> Parameter:
    if problem_type == INFERRED_PROBLEM_TYPE:
        return Parameter(
            str,
            optional=True,
            description="classification | regression; unset: inferred from the label (decimals: regression; "
            "strings, booleans, up to 20 whole numbers: classification; more: regression).",
        )
    return Parameter(str, default=problem_type, description="classification | regression.")


def column_parameters(
    position: str, key_hashes: str, *, columns: str, infer_rows: str, **own: Parameter
) -> dict[str, Parameter]:
    """`label_parameters` of a table of named columns whose types a config may declare (csv, parquet), the problem
    type inferred from the label: `columns` and `infer_rows` say what those parameters do in this format; its
    `own` parameters go between them."""
    return {
        **label_parameters(
            thing="column",
            position=position,
            problem_type=INFERRED_PROBLEM_TYPE,
            key_hashes=key_hashes,
            columns=Parameter(dict, default={}, description=columns),
            **own,
        ),
        "infer_rows": Parameter(int, default=INFER_ROWS, description=infer_rows),
    }


class InspectedTableIngest(Component):
    """A tabular ingest whose source `kflow validate` reads (its header, a sample) before anything runs: what the
    ingest would refuse (a missing file, label or column, a task) is a config error naming the field."""

    # "module:function" taking the ingest's parameters and returning the source's facts (tabular.columns.SourceFacts).
    inspect: str = ""
    # "module:function" taking the ingest's parameters and returning (the file read, its columns): the header alone.
    header_only: str = ""

    def check_parameters(self) -> list[str]:
        try:
            self.inspect_source()
        except (ValueError, OSError) as error:
            return [str(error)]
        return []

    def inspect_source(self) -> Any:
        """The source's facts; a ValueError naming the field for what the ingest would refuse."""
        return import_path(self.inspect)(**self.parameters)

    def source_columns(self) -> tuple[str, list[str]] | None:
        """(the file read, its columns), from its header alone; None where the ingest cannot say them so."""
        return import_path(self.header_only)(**self.parameters) if self.header_only else None
