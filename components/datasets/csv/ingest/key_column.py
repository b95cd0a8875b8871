"""What a CSV's sampled records say of its columns of codes (whole numbers with leading zeros: kept as written) and
of its key column (data.key): repeated."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kflow.components.datasets.tabular.examples import numbers_rows

if TYPE_CHECKING:  # source.py, which calls these, defines it
    from kflow.components.datasets.csv.ingest.source import Scan


def padded(scan: Scan, column: str) -> str | None:
    """A sampled value of `column` that is a whole number written with leading zeros (073695, 007, a ZIP code's
    02134), else None: such a column holds codes, named as written, and is read as text (its zeros kept)."""
    at = scan.header.index(column)
    for row in scan.sample:
        value = row[at].strip() if len(row) > at else ""
        digits = value.removeprefix("-")
        if len(digits) > 1 and digits.startswith("0") and digits.isdigit():
            return value
    return None


def code_columns(scan: Scan, types: dict[str, str], named: set[str]) -> dict[str, str]:
    """{column: a sampled value} of the columns of whole numbers (`types` int, not `named`: declared or written as
    reports write numbers) written with leading zeros: codes, read as text with their zeros kept, as a number would
    drop them (and a key would no longer join the predictions back to the file). A first column that counts the rows
    (0001, 0002, …) stays the row numbers."""
    codes = {}
    for name in scan.header:
        if types.get(name) == "int" and name not in named and (example := padded(scan, name)):
            if not (name == scan.header[0] and _counts_rows(scan)):
                codes[name] = example
    return codes


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
