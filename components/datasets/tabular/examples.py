"""What the tabular ingests share: checking an Example's features against their types, and the schema they write.

Types: `int`, `float`, `string`, `bool` (csv only; stored as int 0/1). The schema has one scalar
feature per column and tags the label (`role=label`, `task=...`) and the key (`role=key`), so the
tabular task, SchemaGen and the Evaluator find them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tensorflow_metadata.proto.v0 import schema_pb2

from kflow.pipeline.dsl.config import did_you_mean

PROBLEM_TYPES = ("classification", "regression")
KINDS = {"int64_list": "int", "float_list": "float", "bytes_list": "string"}
# Data to score without a key column: each record's FILE:LINE (or FILE:ROW), the key its prediction is written with.
SOURCE_ROW = "__source_row__"
# The columns a writer's row names are read as: pandas' `to_csv` and R's `write.csv` write them first under an empty
# name (the CSV reader names it ROW_NAMES); pandas' `to_parquet` stores an index other than 0..n-1 as
# __index_level_0__. They name rows, they are no quality of them (a feature of row numbers learns the file's
# order): the records' key when data.key names none, else tagged role=row_names; never a feature.
ROW_NAMES = "row_names"
# Read and written again, that first column comes back named: `Unnamed: 0` (pandas' read_csv), `...1` (readr's
# read_csv), `rownames` (the CSVs of Rdatasets, R's datasets as most users download them). As the first column only.
FIRST_ROW_NAME_COLUMNS = ("rownames", "Unnamed: 0", "...1")
ROW_NAME_COLUMNS = (ROW_NAMES, "__index_level_0__", *FIRST_ROW_NAME_COLUMNS)
# Under any other name, a first column of whole numbers that count the sampled rows in the file's order from 0 or 1
# (Kaggle's `Id` and `PassengerId`, R's read.csv naming written row names `X`, an `index_label` of pandas) numbers
# the rows as well (`numbers_rows`). Fewer sampled rows than this say nothing.
ROW_NUMBERS_MIN_ROWS = 10


def row_names(types: Mapping[str, str], numbered: str | None = None) -> str | None:
    """The column of `types` (in the source's column order) that holds the writer's row names, if one does;
    `numbered`: the first column when its values number the rows (`numbers_rows`)."""
    first = next(iter(types), None)
    if first in FIRST_ROW_NAME_COLUMNS or (first is not None and first == numbered):
        return first
    return next((name for name in (ROW_NAMES, "__index_level_0__") if name in types), None)


def numbers_rows(values: Sequence[str]) -> bool:
    """Whether a column's sampled `values` (as written, in the file's order) count the rows: 0, 1, 2, … or 1, 2, …,
    zero-padded or not (0001, 0002, …)."""
    if len(values) < ROW_NUMBERS_MIN_ROWS or not all(
        value.strip().isascii() and value.strip().isdigit() for value in values
    ):
        return False
    start = int(values[0])
    return start in (0, 1) and all(int(value) == start + at for at, value in enumerate(values))


PROTO_TYPES = {"int": schema_pb2.INT, "bool": schema_pb2.INT, "float": schema_pb2.FLOAT, "string": schema_pb2.BYTES}


def build_schema(
    types: Mapping[str, str], label: str | None, problem_type: str | None, key: str | None, numbered: str | None = None
) -> schema_pb2.Schema:
    """The TFMD schema of the Examples: one scalar feature per column; the label and key tagged by role.

    Tags (`annotation.tag`): `kflow_type=<type>` on every feature, `role=label` and `task=<task>` on the
    label, `role=key` on the key column (the row names' when `key` is None: ROW_NAMES), `role=row_names` on the
    row names beside another key (`numbered`: see `row_names`). Only the label (and the key) are required to be
    present. Data to score has no label (None).
    """
    schema = schema_pb2.Schema()
    names = row_names(types, numbered)
    key = key if key is not None or names == label else names
    for name, kind in types.items():
        feature = schema.feature.add(name=name, type=PROTO_TYPES[kind])
        feature.value_count.min = feature.value_count.max = 1
        feature.annotation.tag.append(f"kflow_type={kind}")
        if name in (label, key):
            feature.presence.min_fraction = 1.0
            feature.presence.min_count = 1
        if name == label:
            feature.annotation.tag.extend(["role=label", f"task={problem_type}"])
        elif name == key:
            feature.annotation.tag.append("role=key")
        elif name == names:
            feature.annotation.tag.append("role=row_names")
    return schema


def scored_schema(types: Mapping[str, str], key: str | None, numbered: str | None = None) -> schema_pb2.Schema:
    """The schema of data to score (no label): its columns, and its key tagged role=key: the key column, else
    SOURCE_ROW, each record's place in its source (`FILE:LINE` of a CSV, `FILE#ROW` of a Parquet file)."""
    if key is not None or row_names(types, numbered):
        return build_schema(types, None, None, key, numbered)
    if SOURCE_ROW in types:
        raise ValueError(f"the column {SOURCE_ROW!r} is the name kflow gives each record's place in its source")
    return build_schema({**types, SOURCE_ROW: "string"}, None, None, SOURCE_ROW)


def check_problem_type(label: Any, problem_type: Any, key: Any, columns: Any) -> None:
    """Refuses a label, task or key the data does not have (`columns`: the feature or column names); a label of
    None is data to score, which has no label and no task."""
    if label is None and problem_type is None:
        if key is not None and key not in columns:
            raise ValueError(f"data.key: {key!r} is not a column of the data (columns: {', '.join(columns)})")
        return
    if not isinstance(label, str) or label not in columns:
        close = did_you_mean(label, columns) if isinstance(label, str) else ""
        raise ValueError(f"data.label: {label!r} is not a column of the data{close} (columns: {', '.join(columns)})")
    if problem_type not in PROBLEM_TYPES:
        raise ValueError(f"data.problem_type: must be one of {', '.join(PROBLEM_TYPES)}, got {problem_type!r}")
    if key is not None and (key not in columns or key == label):
        raise ValueError(f"data.key: {key!r} is not a column of the data other than the label")


def example_problem(example: Any, types: Mapping[str, str], label: str, problem_type: str) -> tuple[str, dict] | None:
    """Why a parsed tf.train.Example does not fit the tabular task, or None: (reason, details)."""
    features = example.features.feature
    for name, feature in features.items():
        kind = KINDS.get(feature.WhichOneof("kind") or "")
        if kind is None:
            continue  # An empty feature: a missing value.
        expected = types.get(name)
        if expected is None:
            return "unexpected_feature", {"feature": name}
        if kind != expected and not (expected == "bool" and kind == "int"):
            return "type_mismatch", {"feature": name, "expected": expected, "found": kind}
        if len(getattr(feature, feature.WhichOneof("kind")).value) > 1:
            return "multi_valued", {"feature": name, "values": len(getattr(feature, feature.WhichOneof("kind")).value)}
    if label is None:  # data to score
        return None
    if label not in features or features[label].WhichOneof("kind") is None:
        return "missing_label", {"feature": label}
    if problem_type == "regression" and types[label] not in ("int", "float"):
        return "bad_label", {"feature": label, "type": types[label]}
    return None


def group_of(example: Any, label: str, problem_type: str) -> str:
    """The stratification group of a record: its label for classification, one group for regression."""
    if problem_type != "classification" or label is None:
        return "all"
    feature = example.features.feature[label]
    value = getattr(feature, feature.WhichOneof("kind")).value[0]
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
