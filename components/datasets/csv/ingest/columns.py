"""CSV column types: declared in the config or inferred from a sample, values parsed by type, the TFMD schema.

Types: `int`, `float`, `string`, `bool` (true/false, yes/no, 1/0, any case; stored as 0/1).
A value equal to one of the missing-value tokens (after stripping spaces) is missing: the
feature is left out of its Example, as TFX does. Inference looks at the non-missing values
of the first `infer_rows` records: booleans → bool, integers → int, numbers → float, otherwise
string, where "all" allows 1 % of the sampled values to be stray (a typo such as "abc" in a
numeric column is then rejected as a bad value instead of turning the column into strings);
a column that is always missing there is a string.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tensorflow_metadata.proto.v0 import schema_pb2

TYPES = ("int", "float", "string", "bool")
TASKS = ("classification", "regression")
DEFAULT_MISSING = ("", "NA", "N/A", "NaN", "nan", "null", "NULL", "None")
_TRUE, _FALSE = {"true", "yes", "1"}, {"false", "no", "0"}
_PROTO_TYPES = {"int": schema_pb2.INT, "bool": schema_pb2.INT, "float": schema_pb2.FLOAT, "string": schema_pb2.BYTES}


class BadValue(ValueError):
    """A value that does not parse as its column's type."""


def parse_value(text: str, kind: str) -> int | float | str:
    if kind == "string":
        return text
    if kind == "int":
        try:
            return int(text)
        except ValueError:
            raise BadValue(text) from None
    if kind == "float":
        try:
            value = float(text)
        except ValueError:
            raise BadValue(text) from None
        if not math.isfinite(value):
            raise BadValue(text)
        return value
    lowered = text.lower()
    if lowered in _TRUE:
        return 1
    if lowered in _FALSE:
        return 0
    raise BadValue(text)


def infer_types(
    header: Sequence[str], rows: Iterable[Sequence[str]], declared: Mapping[str, str], missing: frozenset[str]
) -> dict[str, str]:
    """Each column's type: the declared one, else the narrowest type all sampled values parse as."""
    values: dict[str, list[str]] = {name: [] for name in header if name not in declared}
    for row in rows:
        if len(row) != len(header):
            continue
        for name, value in zip(header, row, strict=True):
            if name in values and value.strip() not in missing:
                values[name].append(value.strip())
    return {name: declared.get(name) or _narrowest(values[name]) for name in header}


def _narrowest(values: list[str]) -> str:
    if not values:
        return "string"
    stray = len(values) // 100  # Values allowed not to parse (1 %).
    for kind in ("bool", "int", "float"):
        parsed = [value for value in values if _parses(value, kind)]
        if len(values) - len(parsed) > stray or not parsed:
            continue
        if kind == "bool" and not {value.lower() for value in parsed} - {"0", "1"}:
            continue  # Only 0 and 1: an integer column (a count, a class id) rather than yes/no.
        return kind
    return "string"


def _parses(value: str, kind: str) -> bool:
    try:
        parse_value(value, kind)
    except BadValue:
        return False
    return True


def build_schema(types: Mapping[str, str], label: str, task: str, key: str | None) -> schema_pb2.Schema:
    """The TFMD schema of the Examples: one scalar feature per column; the label and key tagged by role.

    Tags (`annotation.tag`): `kflow_type=<type>` on every feature, `role=label` and `task=<task>` on the
    label, `role=key` on the key column. Only the label (and the key) are required to be present.
    """
    schema = schema_pb2.Schema()
    for name, kind in types.items():
        feature = schema.feature.add(name=name, type=_PROTO_TYPES[kind])
        feature.value_count.min = feature.value_count.max = 1
        feature.annotation.tag.append(f"kflow_type={kind}")
        if name in (label, key):
            feature.presence.min_fraction = 1.0
            feature.presence.min_count = 1
        if name == label:
            feature.annotation.tag.extend(["role=label", f"task={task}"])
        elif name == key:
            feature.annotation.tag.append("role=key")
    return schema


def check_columns(
    header: Sequence[str], label: Any, task: Any, key: Any, declared: Any, types_ok: Iterable[str] = TYPES
) -> None:
    """Refuses a label, key or declared type that the header or the type list does not have."""
    duplicates = sorted({name for name in header if list(header).count(name) > 1})
    if duplicates:
        raise ValueError(f"csv: the header repeats the columns {duplicates}")
    if not isinstance(label, str) or label not in header:
        raise ValueError(f"data.label: {label!r} is not a column of the CSV (columns: {', '.join(header)})")
    if task not in TASKS:
        raise ValueError(f"data.task: must be one of {', '.join(TASKS)}, got {task!r}")
    if key is not None and (key not in header or key == label):
        raise ValueError(f"data.key: {key!r} is not a column of the CSV other than the label")
    if not isinstance(declared, Mapping):
        raise ValueError(f"data.columns: must map column names to types, got {declared!r}")
    for name, kind in declared.items():
        if name not in header:
            raise ValueError(f"data.columns.{name}: no such column in the CSV (columns: {', '.join(header)})")
        if kind not in types_ok:
            raise ValueError(f"data.columns.{name}: type must be one of {', '.join(TYPES)}, got {kind!r}")
