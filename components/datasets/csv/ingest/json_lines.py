"""JSON Lines read as a table: one JSON object a line, as pandas' `to_json(orient="records", lines=True)`, Hugging
Face datasets' `to_json` and BigQuery's exports write them.

The CSV ingest reads them with a dialect of their own (`JsonLines`), so everything it does for a CSV (types inferred
from a sample, dates, numbers as reports write them, missing marks, keys, chunks, rejects) holds for them. The
columns are the keys of every line's object, in the order they first appear: the driver reads each line once for
them (`json_keys`), so a key that first shows up far down the file is a column, not a value lost. Each value is read
as the text a CSV would hold for it (`as_text`): null or an absent key is missing, true and false are booleans,
numbers are as written, strings as they are, and a list is its JSON text (a string column). An object's fields are
columns of their own, named `parent.child` as pandas' `json_normalize` names them (`flat`): BigQuery exports a
record's STRUCT so, and a nested number stays a number. A line that is no JSON object is rejected (`bad_json`) with
its FILE:LINE and text, as a CSV's broken record is.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kflow.components.datasets.csv.ingest.dialect import Dialect, changed_options
from kflow.components.datasets.csv.ingest.json_array import is_json_array
from kflow.components.datasets.csv.ingest.readable import open_records
from kflow.components.datasets.csv.ingest.workbook import is_workbook, sheet_index, sheets
from kflow.components.datasets.tabular.table_files import opens_json_object
from kflow.components.ingest.compressed import SUFFIXES

FORMAT = "jsonl"
PATTERNS = tuple(f"*.{kind}{suffix}" for kind in ("jsonl", "ndjson") for suffix in SUFFIXES)  # beside its CSVs
JSON_PATTERNS = tuple(f"*.json{suffix}" for suffix in SUFFIXES)  # where it holds neither: arrays of records


class BadJson(csv.Error):
    """A line that is no JSON object: the ingest rejects it as `reason` (a csv.Error, as a broken CSV record is)."""

    reason = "bad_json"


@dataclass(frozen=True)
class JsonLines(Dialect):
    """The dialect of JSON Lines: `header` holds the keys (the columns), each line is one record (no quote spans
    lines: JSON writes a newline in a string as `\\n`); UTF-8 (JSON's encoding) unless data.csv.encoding or the
    data says otherwise, as for a CSV (a UTF-16 file with its byte-order mark is read as UTF-8 by `open_source`)."""

    quotechar: str | None = None
    delimited = False  # its fields are not cut at a delimiter: no delimiter to guess or to fix
    name = "JSON Lines"

    def split(self, text: str) -> list[list[str]]:
        try:
            value = json.loads(text.removeprefix("\ufeff"))
        except (ValueError, RecursionError) as error:
            raise BadJson(f"not JSON: {error}") from None
        if not isinstance(value, dict):
            raise BadJson(f"a JSON {_kind(value)}, not an object")
        value = flat(value)
        header = self.header or ()
        fields = [as_text(value.get(name)) for name in header]
        if "\\u" in text and not _encodable(fields):
            raise BadJson("a string holds half of a character (an unpaired \\ud800-\\udfff escape), no text")
        return [fields]


def _encodable(fields: list[str]) -> bool:
    """Whether the fields are text UTF-8 can write: a JSON escape may name half a character (an emoji cut short)."""
    try:
        "".join(fields).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def flat(record: dict[str, Any]) -> dict[str, Any]:
    """`record` with each object's fields as fields of their own, `parent.child` (an empty object: no field)."""
    if not any(isinstance(value, dict) for value in record.values()):
        return record  # most records: nothing to do
    fields: dict[str, Any] = {}
    for name, value in record.items():
        if isinstance(value, dict):
            fields.update({f"{name}.{inner}": item for inner, item in flat(value).items()})
        else:
            fields[name] = value
    return fields


def as_text(value: Any) -> str:
    """A JSON value as the field of a CSV would hold it."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return repr(value)
    return json.dumps(value, ensure_ascii=False)


def _kind(value: Any) -> str:
    return {list: "array", str: "string", bool: "boolean", type(None): "null"}.get(type(value), "number")


def is_json_lines(path: str) -> bool:
    """Whether the (decompressed) file opens a JSON object (table_files.opens_json_object, as `other_format` tells)."""
    with open_records(path) as stream:
        return opens_json_object(stream.read(4096))


def json_keys(files: list[str], readable: dict[str, str], max_records: int | None, encoding: str) -> tuple[str, ...]:
    """The keys of the files' objects in the order they first appear (lines that are no JSON object are passed
    over: the ingest rejects them; a byte not in `encoding` costs its value, not the line's keys); a ValueError
    naming data.source.path when no line holds an object, a key is empty, or the files hold one JSON document
    rather than records (`_one_document`)."""
    keys: dict[str, None] = {}
    read, objects, first, whole = 0, 0, None, True
    for path in files:
        with open_records(readable.get(path, path)) as stream:
            for number, line in enumerate(stream, 1):
                if max_records is not None and read >= max_records:
                    whole = False
                    break
                if not line.strip():
                    continue
                read += 1
                try:
                    value = json.loads(line.decode(encoding, errors="replace").removeprefix("\ufeff"))
                except (ValueError, RecursionError):
                    first = first or line.strip()
                    continue
                if isinstance(value, dict):
                    objects += 1
                    first = first or value
                if isinstance(value, dict) and not (value := flat(value)).keys() <= keys.keys():
                    if "" in value:
                        raise ValueError(f"data.source.path: {Path(path).name}:{number} has a key that is empty")
                    keys.update(dict.fromkeys(value))
    shown = ", ".join(Path(path).name for path in files[:3])
    if document := _one_document(first, objects if whole else None):
        raise ValueError(
            f"data.source.path: {shown} {document}, not JSON Lines (an object a line): write the table with "
            "pandas' to_json(path, orient='records', lines=True)"
        )
    if not keys:
        raise ValueError(f"data.source.path: {shown}: no line holds a JSON object (JSON Lines: an object a line)")
    return tuple(keys)


def _one_document(first: Any, objects: int | None) -> str | None:
    """What the files hold when they are one JSON document, not records: one indented over lines (`{` alone on the
    first), or a single object laid out as pandas' to_json without lines=True writes a table ({column: {row:
    value}} and {row: {column: value}}: every value an object; its split and table layouts); `objects`: the objects
    read, None when the files were not read to their end. A record of one line is a record, whatever it holds."""
    if first in (b"{", b"["):
        return "holds one JSON document written over several lines"
    if objects != 1 or not isinstance(first, dict) or not first:
        return None
    if all(isinstance(value, dict) for value in first.values()) or set(first) in PANDAS_LAYOUTS:
        return "holds one JSON object laid out as pandas' to_json writes a whole table by default"
    return None


PANDAS_LAYOUTS = ({"columns", "index", "data"}, {"columns", "data"}, {"schema", "data"})  # orient split, table


def dialect_of(
    files: list[str],
    source_format: str,
    options: dict[str, Any] | None,
    readable: dict[str, str],
    max_records: int | None,
) -> Dialect:
    """The files' dialect: the CSV a workbook's sheet is written as (workbook.py), JSON Lines for source_format jsonl,
    or auto and files that open a JSON object (every one of them), else the CSV dialect `options` (data.csv) give."""
    if books := [path for path in files if is_workbook(path)]:
        if source_format == FORMAT:
            raise ValueError(f"data.source.format: jsonl, but {Path(books[0]).name} is an Excel workbook: set auto")
        return _workbook_dialect(files, books, options)
    if (options or {}).get("sheet") is not None:
        raise ValueError(f"data.csv.sheet: {Path(files[0]).name} is no Excel workbook: a sheet is a workbook's")
    if source_format not in (FORMAT, "auto"):
        return Dialect.from_options(options)
    if source_format == "auto":
        # By path: a glob's names may repeat. An empty JSON array (a paged export's last page) opens no object.
        kinds = {path: is_json_lines(readable.get(path, path)) or is_json_array(path) for path in files}
        if not any(kinds.values()):
            return Dialect.from_options(options)
        if not all(kinds.values()):
            first_json = next(Path(path).name for path, json_lines in kinds.items() if json_lines)
            first_csv = next(Path(path).name for path, json_lines in kinds.items() if not json_lines)
            raise ValueError(
                f"data.source.path: {first_json} is JSON Lines and {first_csv} is not: point it at files of one format"
            )
    given = Dialect.from_options(options)
    unused = sorted(changed_options(options) - {"missing_values", "encoding"})
    if unused:
        raise ValueError(
            f"data.csv.{unused[0]}: the files are JSON Lines, whose keys name the columns and whose values are typed: "
            "only data.csv.missing_values and encoding apply to them"
        )
    keys = json_keys(files, readable, max_records, given.encoding or "utf-8")
    # The encoding left out is read from the data, as a CSV's (UTF-8, else cp1252: source._scan_encoded).
    return JsonLines(header=keys, missing=given.missing, encoding=given.encoding)


def _workbook_dialect(files: list[str], books: list[str], options: dict[str, Any] | None) -> Dialect:
    """The dialect workbook.open_sheet writes: commas, double quotes, UTF-8, a decimal point; of data.csv, only
    missing_values, header and sheet (in every workbook) apply (a cell is typed, not text to cut)."""
    if len(books) != len(files):
        other = next(Path(path).name for path in files if path not in books)
        raise ValueError(
            f"data.source.path: {Path(books[0]).name} is an Excel workbook and {other} is not: point it at files of "
            "one format"
        )
    unused = sorted(changed_options(options) - {"missing_values", "header", "sheet"})
    if unused:
        raise ValueError(
            f"data.csv.{unused[0]}: the files are Excel workbooks, whose cells are typed: only "
            "data.csv.missing_values, header and sheet apply to them"
        )
    dialect = Dialect.from_options(options)
    for path in books:  # the sheet named is in every workbook
        sheet_index(path, sheets(path), dialect.sheet)
    return replace(dialect, encoding="utf-8", decimal=".")
