"""The notes below a table's last record (a source, notes, a copyright line): lines, not records."""

from __future__ import annotations

from collections.abc import Iterable

from kflow.components.datasets.csv.ingest.dialect import Dialect
from kflow.components.datasets.csv.ingest.header import split_row
from kflow.components.datasets.csv.ingest.records import Record
from kflow.components.datasets.tabular import columns as cols

FOOTNOTE_LINES = 20  # The most lines of notes below a table's last record (a source, notes, a copyright line).


def footnotes(last: Iterable[Record], dialect: Dialect, width: int) -> frozenset[int]:
    """The lines of a file's `last` records (its end) that are notes below the table: each record from the end with
    fewer fields than the header's `width` and a first field that is no number (`Source: …`, not `6.1,2.8`: a
    record cut short stays one, wrong_field_count), up to the last record that is not. None when a record among
    them does not parse (an unterminated quote, bytes not in the encoding: rejected as such) or every last record
    is short (they are not a table's: the ingest rejects them)."""
    lines: list[int] = []
    for record in reversed(list(last)):
        fields = None if record.unterminated else split_row(record.raw, dialect)
        if fields is None:
            return frozenset()
        if len(fields) >= width or cols.parses(fields[0].strip(), "float"):
            return frozenset(lines)
        lines.append(record.line)
    return frozenset()
