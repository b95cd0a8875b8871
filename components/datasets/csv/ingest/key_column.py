"""What a CSV's sampled records say of its columns of codes (whole numbers with leading zeros: kept as written) and
of its key column (data.key): repeated."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kflow.components.datasets.tabular.examples import numbers_rows

if TYPE_CHECKING:  # source.py, which calls these, defines it
    from kflow.components.datasets.csv.ingest.source import Scan


def code_columns(
    scan: Scan, types: dict[str, str], named: set[str], label: Any, key: Any, missing: frozenset[str]
) -> dict[str, str]:
    """{column: a sampled value} of the columns of whole numbers (`types` int, not `named`: declared, or written as
    reports write numbers) that are codes, read as text with their zeros kept: the key, where any value has a leading
    zero (it would no longer join the predictions back to the file); another column, but the label, where every
    value is written with the same number of digits, three or more, and one has a leading zero (a ZIP code's 02134,
    a customer number's 073695), not where a few are or two digits are (minutes and months, 05, are numbers too;
    -05 is a temperature). A first column that counts the rows (0001, 0002, …) stays the row numbers."""
    codes = {}
    for at, name in enumerate(scan.header):
        if types.get(name) != "int" or name in named or name == label:
            continue
        values = [row[at].strip() for row in scan.sample if len(row) > at and row[at].strip() not in missing]
        example = next((value for value in values if _padded(value)), None)
        if example is None:
            continue
        if name == key:
            codes[name] = example
        elif _one_width(values) >= 3 and not (at == 0 and _counts_rows(scan)):
            codes[name] = example
    return codes


def _padded(value: str) -> bool:
    """A whole number written with a leading zero: 073695, 007, -05 (not 0, not 0.5)."""
    digits = value.removeprefix("-")
    return len(digits) > 1 and digits.startswith("0") and digits.isascii() and digits.isdigit()


def _one_width(values: list[str]) -> int:
    """The digits of every value, when all are unsigned whole numbers of that many digits; else 0."""
    widths = {len(value) if value.isascii() and value.isdigit() else 0 for value in values}
    return widths.pop() if len(widths) == 1 else 0


def _counts_rows(scan: Scan) -> bool:
    """Whether the first column's sampled values, read as numbers, count the rows (0001, 0002, …)."""
    return numbers_rows([row[0] if row else "" for row in scan.sample])


def repeated(scan: Scan, key: Any, missing: frozenset[str]) -> int:
    """How many sampled records hold a key an earlier one holds (the ingest rejects them: duplicate_key)."""
    if not isinstance(key, str) or key not in scan.header:
        return 0
    at, seen, count = scan.header.index(key), set(), 0
    for row in scan.sample:
        value = row[at].strip() if len(row) == len(scan.header) else ""
        if value and value not in missing:
            count += value in seen
            seen.add(value)
    return count
