"""How the csv ingest reads a file: its bytes as compressed.open_source gives them (decompressed, UTF-16 as UTF-8), a
JSON array of objects as JSON Lines (json_array.py), an Excel workbook's sheet as CSV (workbook.py)."""

from __future__ import annotations

from typing import BinaryIO

from kflow.components.datasets.csv.ingest.json_array import is_json_array, open_array
from kflow.components.datasets.csv.ingest.workbook import is_workbook, open_sheet
from kflow.components.ingest.compressed import needs_decoding, open_source


def open_records(path: str, sheet: str | int | None = None) -> BinaryIO:
    """The file's records as lines of bytes: a workbook's `sheet` (None: the first) as CSV, a JSON array as JSON
    Lines, any other file as open_source reads it."""
    if is_workbook(path):
        return open_sheet(path, sheet)
    if is_json_array(path):
        return open_array(path)
    return open_source(path)


def needs_copy(path: str) -> bool:
    """Whether the ingest reads the file from a copy (its records cannot be cut by byte offsets): compressed, UTF-16,
    a workbook or a JSON array (their rows and elements are lines only once written out)."""
    return is_workbook(path) or needs_decoding(path) or is_json_array(path)
