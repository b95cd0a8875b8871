"""An Excel workbook (.xlsx, .xlsm) read as a CSV: the worksheet data.csv.sheet names, else the first, as pandas'
`read_excel` reads one by default (chart sheets hold no table and are not counted).

`open_sheet` streams the sheet's rows as CSV lines (openpyxl's read-only reader: a row at a time, whatever the
sheet's size), so the csv ingest reads it as any CSV: header, preamble rows above it, types inferred from a sample,
dates, missing marks and Excel's errors (`#DIV/0!`), chunks, rejects. A row's line is its row number in the sheet
(a blank row is a blank line, which the ingest passes over), so a record's place, FILE:N, is the row a spreadsheet
shows (a line break typed in a cell is read as a space, so that each row stays one line). Each cell is written as
the text a CSV would hold for it (`cell_text`): numbers as Python writes them, dates as ISO text, booleans
true/false, an empty cell nothing; a formula's value as Excel last computed it (a formula never computed, as a
workbook written by a script may hold, is empty). Every row and cell there is is read, whatever size the file
declares (pandas resets it too: some writers declare a wrong one). The rows are as wide as the widest of the
first WIDTH_ROWS (a title above the header is narrower); a later row with a value past that width keeps it, and the
ingest rejects the row (`wrong_field_count`) with its text, rather than the value being dropped.
"""

from __future__ import annotations

import csv
import datetime
import io
import itertools
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from kflow.components.datasets.csv.ingest.header import PREAMBLE_LINES
from kflow.components.datasets.csv.ingest.streams import ChunkStream

WIDTH_ROWS = 50  # rows read before the sheet's width is set
WRITE_BYTES = 1 << 16  # CSV text handed to the reader at once
PATTERNS = ("*.xlsx", "*.xlsm")  # A folder's workbooks, where it holds no CSV or JSON


def is_workbook(path: str) -> bool:
    """Whether the file is an Office Open XML workbook (.xlsx, .xlsm: a ZIP holding `xl/workbook.xml`)."""
    try:
        with zipfile.ZipFile(path) as archive:
            return "xl/workbook.xml" in archive.namelist()
    except (zipfile.BadZipFile, OSError):
        return False


def open_sheet(path: str, sheet: str | int | None = None) -> BinaryIO:
    """The workbook's `sheet` (`sheet_index`) as the bytes of a UTF-8 CSV, streamed; a ValueError naming
    data.source.path for a workbook openpyxl cannot read, data.csv.sheet for a sheet it does not have."""
    book = _load(path)
    try:
        chosen = book.worksheets[sheet_index(path, [each.title for each in book.worksheets], sheet)]
        chosen.reset_dimensions()  # the size a writer declared may be wrong: read every row and cell there is
    except ValueError:
        book.close()
        raise
    return io.BufferedReader(ChunkStream(_csv_lines(chosen), book.close), 1 << 16)


def sheet_index(path: str, names: list[str], sheet: str | int | None) -> int:
    """The place of `sheet` among the workbook's worksheets `names` (its chart sheets hold no table): None, the
    first; a name; a number, the sheet of that name if there is one (`2020`, as YAML reads it), else its place
    from 0."""
    if not names:
        raise ValueError(f"data.source.path: {Path(path).name} is a workbook without a worksheet")
    if sheet is None:
        return 0
    if str(sheet) in names:
        return names.index(str(sheet))
    if isinstance(sheet, int) and sheet < len(names):
        return sheet
    shown = ", ".join(repr(name) for name in names)
    raise ValueError(f"data.csv.sheet: {Path(path).name} has no sheet {sheet!r} (its sheets, from 0: {shown})")


def sheet_read(path: str, sheet: Any) -> str:
    """What the log says of the sheet read."""
    names = sheets(path)
    read = names[sheet_index(path, names, sheet)]
    which = f"its sheet {read!r} of {len(names)} ({', '.join(names)})" if len(names) > 1 else f"its sheet {read!r}"
    return f"an Excel workbook: {which}, a row a record"


def sheet_naming(path: str, named: frozenset) -> str | None:
    """The first worksheet whose first rows (a preamble may stand above the header) name every column the config
    names (`named`), when the first sheet's do not: a cover sheet ("Info", "README") before the table; else None."""
    if not named:
        return None
    book = _load(path)
    try:
        for index, sheet in enumerate(book.worksheets):
            rows = itertools.islice(sheet.iter_rows(values_only=True), PREAMBLE_LINES + 1)
            if named <= {str(value).strip() for row in rows for value in row if value is not None}:
                return sheet.title if index else None
    finally:
        book.close()
    return None


def sheets(path: str) -> list[str]:
    """The workbook's worksheets' names, in their order (chart sheets left out)."""
    book = _load(path)
    try:
        return [each.title for each in book.worksheets]
    finally:
        book.close()


def _load(path: str) -> Any:
    import openpyxl  # only where a workbook is read: 0.2 s to import

    try:
        return openpyxl.load_workbook(path, read_only=True, data_only=True)
    except Exception as error:  # openpyxl raises many kinds (KeyError, XML errors, OSError) for a broken file
        raise ValueError(f"data.source.path: {Path(path).name} is a workbook openpyxl cannot read: {error}") from None


def _csv_lines(sheet: Any) -> Iterator[bytes]:
    rows = sheet.iter_rows(values_only=True)
    first = [_trimmed(row) for _, row in zip(range(WIDTH_ROWS), rows, strict=False)]
    width = max(map(len, first), default=0)
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    for row in itertools.chain(first, (_trimmed(row) for row in rows)):
        if row:
            writer.writerow([cell_text(value) for value in row] + [""] * (width - len(row)))
        else:
            text.write("\n")  # a blank row: a blank line, so the lines below keep their row numbers
        if text.tell() >= WRITE_BYTES:
            yield text.getvalue().encode("utf-8")
            text.seek(0)
            text.truncate()
    if text.tell():
        yield text.getvalue().encode("utf-8")


def _trimmed(row: tuple) -> tuple:
    """The row without its empty cells at the end (a sheet's rows often run past its data)."""
    end = len(row)
    while end and (row[end - 1] is None or row[end - 1] == ""):
        end -= 1
    return row[:end]


def cell_text(value: Any) -> str:
    """A cell's value as the field of a CSV would hold it."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, datetime.datetime):
        if value.time() == datetime.time():
            return value.date().isoformat()
        return value.isoformat(sep=" ")
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, str) and ("\n" in value or "\r" in value):  # a line break typed in a cell (Alt+Enter)
        return " ".join(value.splitlines())  # one row, one line: FILE:ROW stays the sheet's row
    return str(value)
