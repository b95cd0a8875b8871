"""A wide batch of records parsed into columns by TensorFlow's `parse_example`, in C++, rather than value by value.

analyzers.parse_columns reads a record's features in Python, about 1.2 µs a value: MNIST written as a CSV (784 pixel
columns) spent 9.7 s of its Transform's 17 s analysis parsing 8,000 training records so; `parse_example` reads the
same batch in a ninth of that. Used for the number and string columns of a batch holding at least WIDE_VALUES values
(below, Python's loop costs less than TensorFlow's start in a worker that has not loaded it); the values are those
the Python loop gives, in the same order (record by record): numbers as float64 without int64's minimum (a missing
int) or non-finite values, strings without the empty ones. None, and the caller parses in Python, where a column's
records do not all store one kind of list (parse_example would refuse them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from kflow.components.util.example_columns import sparse_columns
from kflow.components.util.example_proto import Example

WIDE_VALUES = 100_000  # records × columns of a batch parsed by TensorFlow
INT_MISSING = -(2**63)  # what a tabular ingest never writes for a present int: parsed as missing
_KINDS = ("int64_list", "float_list", "bytes_list")


def parse_wide(records: Sequence[bytes], columns: dict[str, str]) -> dict[str, list] | None:
    """{column: its present values in `records`} of `columns` {name: "number" | "string"}, or None (see above)."""
    stored = _stored_kinds(records, columns)
    if stored is None:
        return None
    parsed = sparse_columns(records, stored)
    if parsed is None:  # a record stores another kind of list for a column
        return None
    values: dict[str, list] = {}
    for name, kind in columns.items():
        if name not in parsed:
            values[name] = []
            continue
        found = parsed[name].values
        if kind == "number":
            found = found[found != INT_MISSING] if found.dtype == np.int64 else found
            found = found.astype(np.float64)
            values[name] = found[np.isfinite(found)].tolist()
        else:
            values[name] = [value for value in found.tolist() if value]
    return values


def _stored_kinds(records: Sequence[bytes], columns: dict[str, str]) -> dict[str, str] | None:
    """{column: the kind of list its first record holding it stores}, read from as few records as that takes (the
    first, mostly); None for a number stored as bytes or a string as numbers (the Python loop says what it is)."""
    stored: dict[str, str] = {}
    wanted = set(columns)
    for record in records:
        features = Example.FromString(record).features.feature
        for name in [name for name in wanted if name in features]:
            kind = features[name].WhichOneof("kind")
            if kind in _KINDS:
                if (kind == "bytes_list") != (columns[name] == "string"):
                    return None
                stored[name] = kind
                wanted.discard(name)
        if not wanted:
            break
    return stored


def is_wide(records: Sequence[Any], columns: dict[str, str]) -> bool:
    return len(records) * len(columns) >= WIDE_VALUES
