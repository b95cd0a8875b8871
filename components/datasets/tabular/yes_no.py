"""A yes/no (true/false) label's classes, whatever the case its words are written in.

A label of two words read as a boolean (`no`/`yes`, `False`/`True`) keeps its words as the classes, each written one
way: `no` and `yes` in lower case, `False` and `True` as pandas writes a bool column (a Parquet bool label's
classes). Written as they came, `no`/`yes` in one export and `No`/`Yes` in the next made four classes of two once
the spans were joined (a user trial's BLESSED model of `No, Yes, no, yes`), and a file of mixed cases (`Yes`, `yes`,
`no`) two other ones (0 and 1): the classes of one label are now the same in every file and every span.
"""

from __future__ import annotations

from collections.abc import Iterable

_CANONICAL = {"no": "no", "yes": "yes", "false": "False", "true": "True"}
_PAIRS = (frozenset({"no", "yes"}), frozenset({"false", "true"}))


def class_name(value: str) -> str:
    """`value` (stripped) as its class's name: a yes/no or true/false word in its one spelling, else as written."""
    return _CANONICAL.get(value.lower(), value)


def words_of_one_pair(values: Iterable[str]) -> bool:
    """Whether the (stripped, present) `values` are words of one pair, yes/no or true/false, in any case."""
    lowered = {value.lower() for value in values}
    return bool(lowered) and any(lowered <= pair for pair in _PAIRS)
