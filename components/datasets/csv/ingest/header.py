"""A CSV file's header: the columns' names as the ingest reads them, and where its records start.

Files as people save them name columns other than a table's columns must be named: pandas' `to_csv` and R's
`write.csv` write the row names under an empty first name (ROW_NAMES); a spreadsheet saves the empty columns its
cells were formatted in, unnamed; a sheet may name two columns alike (`Total`, `Total`). Each is given a name of its
own (`column_names`) and said by `kflow validate` and the ingest's log (SourceFacts.renamed), instead of refused;
lines above the header (a title, an export's date) are passed over when the config names its columns (`read_header`).
"""

from __future__ import annotations

import csv
import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from kflow.components.datasets.csv.ingest.records import Record
from kflow.components.datasets.tabular.examples import ROW_NAMES

UNNAMED = "unnamed_{}"  # A column past the first the header names not, by its position from 1 (pandas: `Unnamed: 5`)
# Said wherever a file's bytes do not decode: spreadsheets on Windows save CSV as cp1252 (Western Europe).
ENCODING_HINT = "set data.csv.encoding to the file's (e.g. cp1252, latin-1)"


class HeaderNotDecoded(ValueError):
    """A header whose bytes are not in the dialect's encoding."""


def column_names(written: list[str]) -> tuple[list[str], dict[str, str]]:
    """(the columns' names, {name given: the name written} of those renamed): names stripped; an empty first one
    ROW_NAMES (the writer's row names); another empty one UNNAMED by its position; a name written again suffixed
    by its occurrence (`Total_2`), past any name the header holds."""
    header = [name.strip() for name in written]
    if len(header) > 1 and not header[0] and ROW_NAMES not in header:  # pandas' to_csv, R's write.csv: row names
        header[0] = ROW_NAMES
    # A name written with spaces around it ('income '), read without them: said as a renaming too.
    renamed: dict[str, str] = {name: raw for name, raw in zip(header, written, strict=False)
                               if name and raw != name and raw.strip() == name and header.count(name) == 1}  # fmt: skip
    seen: dict[str, int] = {}
    taken = set(header)
    for at, name in enumerate(header):
        if not name and at:
            given = UNNAMED.format(at + 1)
        elif name in seen:
            seen[name] += 1
            given = f"{name}_{seen[name]}"
        else:
            seen[name] = 1
            continue
        while given in taken:  # a name the header holds already (`unnamed_3` written, `Total_2`)
            given += "_"
        header[at] = given
        taken.add(given)
        renamed[given] = name
    return header, renamed


PREAMBLE_LINES = 20  # The most records a file's header may follow (a title, an export's date, blank lines).


@dataclass
class Header:
    """A file's columns (`column_names`), those renamed, where its records start (byte offset and line), the
    lines above it (a preamble: `skipped`), the file's records from there on (`records`), and the header's fields as
    written, stripped (`written`: what a record repeating the header holds; none for JSON Lines, whose names are
    keys)."""

    names: list[str]
    renamed: dict[str, str]
    start: int
    line: int
    skipped: int
    records: Iterator[Record]
    written: tuple[str, ...] = ()


def read_header(path: str, records: Iterator[Record], dialect: Any, wanted: frozenset[str] = frozenset()) -> Header:
    """The header of the file whose `records` these are: the first record, or, when it names none of the `wanted`
    columns (the label, the key, the declared columns), the first of the next PREAMBLE_LINES records that names them
    all: exports from statistics offices, instruments and sheets put a title and a date above the header."""
    if dialect.header is not None:
        written = tuple(name.strip() for name in dialect.header) if dialect.delimited else ()
        return Header(list(dialect.header), {}, 0, 1, 0, records, written)
    first = next(records, None)
    if first is None:
        raise ValueError(f"csv: {path} is empty (no header row)")
    chosen = first
    if wanted and not wanted & set(_names(first, dialect)):
        ahead = list(itertools.islice(records, PREAMBLE_LINES))
        at = next((at for at, record in enumerate(ahead) if wanted <= set(_names(record, dialect))), None)
        if at is None:
            records = itertools.chain(ahead, records)
        else:
            chosen, records = ahead[at], itertools.chain(ahead[at + 1 :], records)
    if chosen.unterminated:
        raise ValueError(f"csv: the header of {path} has an unterminated quote")
    raw = chosen.raw.removeprefix(b"\xef\xbb\xbf")
    if not decodes(raw, dialect):
        raise HeaderNotDecoded(f"csv: {path} line {chosen.line}: the header is not {dialect.encoding}: {ENCODING_HINT}")
    fields = split_row(raw, dialect) or []
    header, renamed = column_names(fields)
    if not header or any(not name for name in header):
        raise ValueError(f"csv: {path} line {chosen.line}: the header {header} has an empty column name")
    written = tuple(field.strip() for field in fields)
    return Header(header, renamed, chosen.end, chosen.next_line, chosen.line - first.line, records, written)


def repeats_header(fields: list[str], written: tuple[str, ...]) -> bool:
    """Whether a record's `fields` are the header's names as `written` (stripped): a header of a file joined on."""
    if not written or len(fields) != len(written) or fields[0].removeprefix("\ufeff").strip() != written[0]:
        return False  # most records: their first field is no column's name (a joined file's header: its BOM too)
    return [field.strip() for field in fields[1:]] == list(written[1:])


def _names(record: Record, dialect: Any) -> list[str]:
    return [name.strip() for name in split_row(record.raw.removeprefix(b"\xef\xbb\xbf"), dialect) or []]


def split_row(raw: bytes, dialect: Any) -> list[str] | None:
    """A record's fields, or None when it does not decode or is not one row."""
    try:
        rows = dialect.split(raw.decode(dialect.encoding).rstrip("\r\n"))
    except (UnicodeDecodeError, csv.Error):
        return None
    return rows[0] if len(rows) == 1 else None


def decodes(raw: bytes, dialect: Any) -> bool:
    try:
        raw.decode(dialect.encoding)
    except UnicodeDecodeError:
        return False
    return True
