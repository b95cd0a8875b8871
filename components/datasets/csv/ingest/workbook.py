"""An Excel workbook (.xlsx, .xlsm) read as a CSV: the sheet data.csv.sheet names, else the first, as pandas'
`read_excel` reads one by default.

`open_sheet` streams the sheet's rows as CSV lines (openpyxl's read-only reader: a row at a time, whatever the
sheet's size), so the csv ingest reads it as any CSV: header, preamble rows above it, types inferred from a sample,
dates, missing marks and Excel's errors (`#DIV/0!`), chunks, rejects. A row's line is its row number in the sheet
(a blank row is a blank line, which the ingest passes over), so a record's place, FILE:N, is the row a spreadsheet
shows. Each cell is written as the text a CSV would hold for it (`cell_text`): numbers as Python writes them, dates
as ISO text, booleans true/false, an empty cell nothing; a formula's value as Excel last computed it (a formula
never computed, as a workbook written by a script may hold, is empty). The rows are as wide as the widest of the
first WIDTH_ROWS (a title above the header is narrower); a later row with a value past that width keeps it, and the
ingest rejects the row (`wrong_field_count`) with its text, rather than the value being dropped.
"""

from __future__ import annotations

import csv
import datetime
import io
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from kflow.components.datasets.csv.ingest.streams import ChunkStream

WIDTH_ROWS = 50  # rows read before the sheet's width is set
LINES_A_WRITE = 256
PATTERNS = ("*.xlsx", "*.xlsm")  # A folder's workbooks, where it holds no CSV or JSON


def is_workbook(path: str) -> bool:
    """Whether the file is an Office Open XML workbook (.xlsx, .xlsm: a ZIP holding `xl/workbook.xml`)."""
    try:
        with zipfile.ZipFile(path) as archive:
            return "xl/workbook.xml" in archive.namelist()
    except (zipfile.BadZipFile, OSError):
        return False


def open_sheet(path: str, sheet: str | int | None = None) -> BinaryIO:
    """The workbook's `sheet` (its name, or its place from 0; None: the first) as the bytes of a UTF-8 CSV,
    streamed; a ValueError naming data.source.path for a workbook openpyxl cannot read, data.csv.sheet for a sheet
    it does not have."""
    import openpyxl  # only where a workbook is read: 0.2 s to import

    try:
        book = openpyxl.load_workbook(path, read_only=True, data_only=True)
    except Exception as error:  # openpyxl raises many kinds for a broken or encrypted file
        raise ValueError(f"data.source.path: {Path(path).name} is a workbook openpyxl cannot read: {error}") from None
    try:
        chosen = book.worksheets[sheet_index(path, book.sheetnames, sheet)]
    except ValueError:
        book.close()
        raise
    return io.BufferedReader(ChunkStream(_csv_lines(chosen), book.close), 1 << 16)


def sheet_index(path: str, names: list[str], sheet: str | int | None) -> int:
    """The place of `sheet` (a name, a place from 0, None: the first) among the workbook's sheets `names`."""
    if not names:
        raise ValueError(f"data.source.path: {Path(path).name} is a workbook without a sheet")
    if sheet is None:
        return 0
    if isinstance(sheet, int) and sheet < len(names):
        return sheet
    if isinstance(sheet, str) and sheet in names:
        return names.index(sheet)
    shown = ", ".join(repr(name) for name in names)
    raise ValueError(f"data.csv.sheet: {Path(path).name} has no sheet {sheet!r} (its sheets, from 0: {shown})")


def sheets(path: str) -> list[str]:
    """The workbook's sheets' names, in their order."""
    import openpyxl

    book = openpyxl.load_workbook(path, read_only=True)
    try:
        return list(book.sheetnames)
    finally:
        book.close()


def _csv_lines(sheet: Any) -> Iterator[bytes]:
    rows = sheet.iter_rows(values_only=True)
    first = [_trimmed(row) for _, row in zip(range(WIDTH_ROWS), rows, strict=False)]
    width = max(map(len, first), default=0)
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    for count, row in enumerate(_chained(first, (_trimmed(row) for row in rows)), 1):
        if row:
            writer.writerow([cell_text(value) for value in row] + [""] * (width - len(row)))
        else:
            text.write("\n")  # a blank row: a blank line, so the lines below keep their row numbers
        if count % LINES_A_WRITE == 0:
            yield text.getvalue().encode("utf-8")
            text.seek(0)
            text.truncate()
    if text.tell():
        yield text.getvalue().encode("utf-8")


def _chained(first: list, rest: Iterator) -> Iterator:
    yield from first
    yield from rest


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
    return str(value)
