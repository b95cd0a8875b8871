"""Numbers as reports and spreadsheets write them: a currency sign before or after, thousands grouped by commas, a
percent sign after (`$1,234.50`, `-€5`, `12.50 €`, `£0.99`, `12.5%`, `1,000,000`).

A text column of them (a price, an income, a rate) read as text is a category per value, and as the label a class
per price. A CSV column whose sampled values are all numbers, some so written (`decorated`), is a float column
whose every value is read as the number written: `12.5%` is 12.5 (the model scales its inputs; a label keeps its
unit) and `$1,234.50` is 1234.5. Commas group thousands only in threes and only where a comma is no decimal mark
(not with `data.csv.decimal: ','` nor between `;`-separated fields, as European spreadsheets save: there
`1,250` is 1.25).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

CURRENCY = "$€£¥₹"
_NUMBER = r"(?:\d+(?:\.\d*)?|\.\d+)"
_GROUPED = r"(?:[1-9]\d{0,2}(?:,\d{3})+(?:\.\d*)?)"
_BEFORE = rf"[+-]?[{CURRENCY}]\s?[+-]?"  # `$5`, `-$5`, `$-5`, `€ 5`
_AFTER = rf"(?:\s?[{CURRENCY}]|%)?"  # `12.50 €`, as much of Europe writes a price; `12.5%`


def _written(number: str) -> re.Pattern:
    return re.compile(rf"{_BEFORE}{number}%?|[+-]?{number}{_AFTER}")


_WRITTEN = _written(_NUMBER)
_WRITTEN_GROUPED = _written(rf"(?:{_GROUPED}|{_NUMBER})")
_MARKS = str.maketrans("", "", CURRENCY + ",% ")
STRAY = 100  # As in type inference: one sampled value in this many may be something else (a typo, a note).


def plain(text: str, commas: bool = True) -> float | None:
    """The number `text` writes with its currency sign, thousands commas (when `commas`) or percent sign left out;
    None when it is no number so written."""
    pattern = _WRITTEN_GROUPED if commas else _WRITTEN
    if not pattern.fullmatch(text):
        return None
    try:
        return float(text.translate(_MARKS))
    except ValueError:  # two signs: `-$-5`
        return None


def decorated(
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    types: Mapping[str, str],
    missing: frozenset[str],
    commas: bool,
) -> dict[str, str]:
    """{column: the marks seen} for each column read as text or float whose sampled `rows` are numbers as written
    above (all but one in STRAY), at least one with a mark; `commas`: whether a comma may group thousands."""
    found = {}
    for index, name in enumerate(header):
        if types.get(name) not in ("string", "float"):
            continue
        values = [row[index].strip() for row in rows if len(row) == len(header)]
        values = [value for value in values if value not in missing]
        marked = {mark for value in values for mark in value if mark in CURRENCY + ",%"}
        if not values or not marked:
            continue
        written = sum(plain(value, commas) is not None for value in values)
        if len(values) - written <= len(values) // STRAY:
            found[name] = "".join(sorted(marked))
    return found
