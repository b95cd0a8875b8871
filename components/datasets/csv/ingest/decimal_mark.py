"""The decimal mark of a CSV's numbers: a point, or a comma (`14,23`), as European spreadsheets save them.

Excel in Germany, France, Italy, Spain or the Netherlands saves a CSV with `;` between the fields and a comma in
each decimal number (`5,1;3,5;setosa`), since the comma is the locale's decimal mark. Read with a point, such
numbers are text: a category per value. A config that leaves `data.csv.decimal` out has it read from the sample:
a comma where the fields are not cut at commas and a column holds nothing but numbers so written (whole numbers, and
thousands grouped by points, `1.234,5`, beside them), one at least with a decimal comma; else a point. Between tabs
(or `|`), a US export groups thousands by commas (`1,234`), so there the column must hold a number a comma cannot
group (`14,23`, `0,5`, `1234,5`); between `;`, the European spreadsheets' own mark, `1,234` is 1.234 as they write
it. A config that sets it keeps it.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence

# A number written with a decimal comma (14,23; -0,5; 1,5e3).
DECIMAL_COMMA = re.compile(r"\s*[+-]?(\d+,\d*|,\d+)([eE][+-]?\d+)?\s*")
# With decimal ',': thousands grouped by points (1.234.567,5; 1.234), as the same spreadsheets write them.
POINT_GROUPED = re.compile(r"\s*[+-]?[1-9]\d{0,2}(\.\d{3})+(,\d*)?\s*")
_WHOLE = re.compile(r"\s*[+-]?\d+\s*")
# What thousands grouped by commas look like (1,234; 12,345): a comma that may not be a decimal mark.
_COMMA_GROUPED = re.compile(r"\s*[+-]?[1-9]\d{0,2},\d{3}\s*")


def with_point(value: str) -> str:
    """A number written with a decimal comma, written with a point (`1,5` → `1.5`, `1.234,5` → `1234.5`, `1.234` →
    `1234`); any other value as it is."""
    if "," in value and DECIMAL_COMMA.fullmatch(value):
        return value.replace(",", ".")
    if "." in value and POINT_GROUPED.fullmatch(value):
        return value.replace(".", "").replace(",", ".")
    return value


def comma_columns(
    header: Sequence[str], rows: Sequence[Sequence[str]], missing: Collection[str], delimiter: str
) -> list[str]:
    """The columns whose sampled values (`rows`, the missing ones aside) are all numbers as a decimal comma writes
    them, one at least with the comma (between other delimiters than `;`, one that no thousands' comma writes)."""
    found = []
    for index, name in enumerate(header):
        values = [row[index] for row in rows if len(row) == len(header) and row[index].strip() not in missing]
        commas = [value for value in values if "," in value]
        if delimiter != ";":
            commas = [value for value in commas if not _COMMA_GROUPED.fullmatch(value)]
        if commas and all(_decimal_comma(value) for value in values):
            found.append(name)
    return found


def _decimal_comma(value: str) -> bool:
    return bool(DECIMAL_COMMA.fullmatch(value) or POINT_GROUPED.fullmatch(value) or _WHOLE.fullmatch(value))
