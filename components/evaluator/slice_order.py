"""The natural order of one slice feature's keys, for metrics.json, the report's tables and its charts.

A slice key is a string (components/datasets/metrics.py: `bucket_keys`, and each task's `slice_keys`), so
sorting keys as text reads `age <30, age >=60, age [30,45)`. Here numeric buckets go by their lower bound
(`<30`, `[30,45)`, `[45,60)`, `>=60`), classes in the model's class order, integer values by value, other
values alphabetically, and the missing values' slice last.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar

Value = TypeVar("Value")

# The bucket part of a key: "<30", "[30,45)", ">=60" (bucket_keys' names, after the feature's name and a space).
_BUCKET = re.compile(r"^(?:<(?P<below>[^,\s]+)|\[(?P<low>[^,\s]+),(?P<high>[^,\s)]+)\)|>=(?P<above>[^,\s]+))$")
_MISSING = "missing"


def slice_sort_key(key: str, classes: Sequence[str] = ()) -> tuple:
    """Orders keys of one slice feature: (rank of the kind of key, then its position within the kind)."""
    bucket = _BUCKET.match(key.rsplit(" ", 1)[-1])
    if bucket:  # "age [30,45)", "label >=5", "<20": by the bucket's lower bound, the open-ended "<b0" first
        below, low, above = bucket.group("below", "low", "above")
        start = -math.inf if below is not None else _number(low if low is not None else above)
        if start is not None:
            return (1, start, "")
    name, _, value = key.partition("=")
    if value:  # "label=setosa", "color=red", "count=3", "x=missing"
        if value == _MISSING:
            return (3, 0.0, "")
        if name == "label" and value in classes:
            return (0, float(list(classes).index(value)), "")
        number = _number(value)
        if number is not None:
            return (1, number, "")
        return (2, 0.0, value.casefold())
    return (2, 0.0, key.casefold())


def in_natural_order(
    keys: Mapping[str, Value] | Iterable[tuple[str, Value]], classes: Sequence[str] = ()
) -> dict[str, Value]:
    """`keys` ({key: value} or (key, value) pairs) as a dict in the keys' natural order."""
    items = keys.items() if isinstance(keys, Mapping) else keys
    return dict(sorted(items, key=lambda item: slice_sort_key(item[0], classes)))


def class_names(metrics: Mapping[str, Any]) -> list[str]:
    """The model's classes in its own order, where the metrics name them (a classification), else []."""
    matrix = metrics.get("confusion_matrix")
    if isinstance(matrix, Mapping):
        return [str(name) for name in matrix.get("categories") or []]
    return [str(name) for name in metrics.get("per_class_count") or {}]


def _number(text: str) -> float | None:
    try:
        number = float(text)
    except ValueError:
        return None
    return None if math.isnan(number) else number
