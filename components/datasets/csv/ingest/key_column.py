"""What a CSV's sampled records say of its key column (data.key): kept as written, and repeated."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # source.py, which calls these, defines it
    from kflow.components.datasets.csv.ingest.source import Scan


def padded(scan: Scan, key: str) -> bool:
    """Whether a sampled key is a whole number written with leading zeros (073695, 007): a key names records as
    written, so such a column is read as text."""
    at = scan.header.index(key)
    for row in scan.sample:
        digits = row[at].strip().removeprefix("-") if len(row) > at else ""
        if len(digits) > 1 and digits.startswith("0") and digits.isdigit():
            return True
    return False


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
