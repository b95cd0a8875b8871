"""A CSV's dialect: its delimiter, quote, header, missing values, encoding and decimal mark, as `data.csv` gives
them; what the config leaves out of the encoding and the decimal mark is read from the file by the scan
(source.scan_delimited)."""

from __future__ import annotations

import codecs
import csv
import io
from dataclasses import dataclass
from typing import Any

from kflow.components.datasets.csv.ingest.decimal_mark import with_point
from kflow.components.datasets.tabular import columns as cols
from kflow.components.datasets.tabular import written_numbers

DEFAULT_FORMAT = {
    "delimiter": ",",
    "quotechar": '"',
    "header": True,
    "missing_values": list(cols.DEFAULT_MISSING),
    "encoding": None,  # read from the data: UTF-8, else Windows' cp1252 (source.scan_delimited)
    "decimal": None,  # read from the data (decimal_mark.py)
    "sheet": None,  # an Excel workbook's sheet (workbook.py): its name, or its place from 0; None: the first
}


def changed_options(options: dict[str, Any] | None) -> set[str]:
    """The data.csv options given other values than the defaults: a config passes every field of data.csv, its
    defaults (delimiter ',', quotechar '"', header true) too, so a file that takes only some of them (a workbook,
    JSON Lines) refuses only those changed."""
    return {name for name, value in (options or {}).items() if value != DEFAULT_FORMAT.get(name, object())}


# The characters the records are cut at, byte by byte (records.py): an encoding must write each as ASCII does.
_CUT_AT = "\r\n\"',;|\t abcXYZ019"


@dataclass(frozen=True)
class Dialect:
    delimiter: str = ","
    quotechar: str | None = '"'
    header: tuple[str, ...] | None = None  # None: each file's first record is its header
    missing: frozenset[str] = frozenset(cols.DEFAULT_MISSING)
    encoding: str | None = "utf-8"  # Python's codec name; None: not read yet
    decimal: str | None = "."  # ",": a number written with a decimal comma is read with a point; None: not read yet
    sheet: str | int | None = None  # the workbook's sheet to read (workbook.open_sheet); None: the first
    delimited = True  # its fields are cut at the delimiter (JSON Lines': json_lines.JsonLines)
    name = "CSV"

    @classmethod
    def from_options(cls, options: dict[str, Any] | None) -> Dialect:
        options = {**DEFAULT_FORMAT, **(options or {})}
        unknown = sorted(set(options) - set(DEFAULT_FORMAT))
        if unknown:
            raise ValueError(f"data.csv: unknown options {unknown} (allowed: {', '.join(DEFAULT_FORMAT)})")
        delimiter, quotechar, header = options["delimiter"], options["quotechar"], options["header"]
        if not isinstance(delimiter, str) or len(delimiter) != 1 or delimiter in "\r\n":
            raise ValueError(f"data.csv.delimiter: must be one character, got {delimiter!r}")
        if quotechar is not None and (not isinstance(quotechar, str) or len(quotechar) != 1 or quotechar == delimiter):
            raise ValueError(
                f"data.csv.quotechar: must be one character other than the delimiter or null, got {quotechar!r}"
            )
        if header is not True and not (isinstance(header, list) and header and all(isinstance(n, str) for n in header)):
            raise ValueError(
                f"data.csv.header: true (the files start with one) or the list of column names, got {header!r}"
            )
        if isinstance(header, list):  # the names a file's header would give: as the ingest checks a file's own
            names = [name.strip() for name in header]
            if not all(names) or len(set(names)) != len(names):
                raise ValueError(f"data.csv.header: column names must be non-empty and distinct, got {header!r}")
        missing = options["missing_values"]
        if not isinstance(missing, list) or not all(isinstance(token, str) for token in missing):
            raise ValueError(f"data.csv.missing_values: must be a list of strings, got {missing!r}")
        encoding = None if options["encoding"] is None else _codec(options["encoding"])
        decimal = options["decimal"]
        if decimal not in (".", ",", None) or decimal == delimiter:
            raise ValueError(f"data.csv.decimal: '.' or ',' (then not the delimiter), got {decimal!r}")
        sheet = options["sheet"]
        if sheet is not None and not (isinstance(sheet, str) and sheet) and not (type(sheet) is int and sheet >= 0):
            raise ValueError(f"data.csv.sheet: a sheet's name, or its place from 0, got {sheet!r}")
        header = None if header is True else tuple(header)
        return cls(delimiter, quotechar, header, frozenset(missing), encoding, decimal, sheet)

    @property
    def number_style(self) -> str:
        """How its numbers group thousands (written_numbers.STYLES): by points with decimal ',' (`1.234,5`); by
        commas with decimal '.' (`1,234.5`), but between `;`-separated fields, where a comma may be a decimal mark
        (European spreadsheets: `1,250` is 1.25), by none."""
        if self.decimal == ",":
            return written_numbers.GROUPED_BY_POINTS
        return written_numbers.UNGROUPED if self.delimiter == ";" else written_numbers.GROUPED_BY_COMMAS

    @property
    def quote(self) -> bytes | None:
        return None if self.quotechar is None else self.quotechar.encode()

    def split(self, text: str) -> list[list[str]]:
        """The CSV rows in `text` (one, for a well-formed record); with decimal ',' its numbers written so read
        with a point and their thousands' points left out (`1,5` → `1.5`, `1.234,5` → `1234.5`, `1.234` → `1234`)."""
        rows = self._split(text)
        if self.decimal == ",":
            rows = [[with_point(value) for value in row] for row in rows]
        return rows

    def _split(self, text: str) -> list[list[str]]:
        if text and (self.quotechar is None or self.quotechar not in text) and "\r" not in text and "\n" not in text:
            return [text.split(self.delimiter)]  # What csv.reader returns for such a line, at a third of the cost.
        quoting = csv.QUOTE_NONE if self.quotechar is None else csv.QUOTE_MINIMAL
        return list(
            csv.reader(
                io.StringIO(text), delimiter=self.delimiter, quotechar=self.quotechar, quoting=quoting, strict=True
            )
        )


def _codec(encoding: Any) -> str:
    """The codec's canonical name; refuses one Python lacks and one that does not write ASCII as ASCII (UTF-16,
    UTF-32): the records are cut at the bytes of newlines, quotes and delimiters."""
    if not isinstance(encoding, str):
        raise ValueError(f"data.csv.encoding: must be an encoding's name (e.g. utf-8, cp1252), got {encoding!r}")
    try:
        name = codecs.lookup(encoding).name
    except LookupError:
        raise ValueError(f"data.csv.encoding: Python knows no encoding {encoding!r} (e.g. utf-8, cp1252)") from None
    if name == "utf-8-sig":  # A byte-order mark is skipped whatever the encoding.
        return "utf-8"
    try:
        ascii_compatible = _CUT_AT.encode(name) == _CUT_AT.encode("ascii")
    except (UnicodeError, LookupError):  # a codec that is no text encoding (e.g. rot13 or base64)
        ascii_compatible = False
    if not ascii_compatible:
        raise ValueError(
            f"data.csv.encoding: {encoding} is not read here (newlines, quotes and delimiters must be one ASCII "
            "byte each, as in UTF-8 and the 8-bit encodings): convert the file to UTF-8 (a UTF-16 file that "
            "starts with its byte-order mark is read as it is: leave data.csv.encoding unset)"
        )
    return name
