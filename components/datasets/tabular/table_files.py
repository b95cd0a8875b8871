"""The files of a tabular source: a file, a folder or a glob pattern, sorted by name (csv, parquet, tfrecord)."""

from __future__ import annotations

import glob
import re
from collections.abc import Sequence
from pathlib import Path


def table_files(dataset: str, source_path: str | None, patterns: Sequence[str], kind: str) -> list[str]:
    """`source_path`'s files: the file, a folder's files matching `patterns` (none: every file not hidden), or the
    files a glob pattern matches; a ValueError naming data.source.path when there are none (`kind`: what a file
    is, e.g. "CSV file")."""
    if not source_path:
        raise ValueError(f"data.source.path: the {dataset} dataset needs a file, a folder or a glob pattern")
    path = Path(source_path).expanduser()
    if path.is_dir() and patterns:
        files = sorted({name for pattern in patterns for name in glob.glob(str(path / pattern))})
    elif path.is_dir():
        files = sorted(str(p) for p in path.iterdir() if p.is_file() and not p.name.startswith("."))
    elif path.is_file():
        files = [str(path)]
    else:
        files = sorted(name for name in glob.glob(str(path)) if Path(name).is_file())
    if not files and not path.exists() and not glob.has_magic(str(source_path)):  # no pattern: a path, mistyped
        raise ValueError(f"data.source.path: {source_path} does not exist")
    if not files:
        raise ValueError(f"data.source.path: {source_path} matches no {kind}")
    return files


# Files people point a table's config at that are no CSV or Parquet, by their first bytes: (magic, what it is, what
# to do). Without this, a Parquet file read as CSV failed as "the header is not utf-8: set data.csv.encoding".
OTHER_FORMATS = (
    (b"PAR1", "a Parquet file", "set data.dataset: parquet"),
    (
        b"PK\x03\x04",
        "a ZIP archive (an Excel .xlsx workbook, or zipped files)",
        "set data.dataset: csv for a workbook (it reads its sheets), or unzip it",
    ),
    (
        b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1",
        "an Excel 97-2003 workbook (.xls) or an encrypted workbook",
        "save it unencrypted as .xlsx (read) or as CSV",
    ),
    (b"SQLite format 3\x00", "an SQLite database", "export the table as CSV or Parquet"),
    (b"ARROW1", "an Arrow IPC (Feather) file", "write it as Parquet (pyarrow.parquet.write_table)"),
    (b"\x89HDF\r\n\x1a\n", "an HDF5 file", "write the table as CSV or Parquet"),
    (b"\x1f\x8b", "gzip-compressed", "name it .csv.gz (a CSV) or decompress it"),
    (b"\xfd7zXZ\x00", "xz-compressed", "decompress it"),
    (b"\x28\xb5\x2f\xfd", "zstd-compressed", "set data.dataset: csv for a compressed CSV, or decompress it"),
)


TAR_MARK = (257, 262)  # where a tar archive's header says `ustar` (its first member's name comes first)


def other_format(start: bytes, expected: str) -> str | None:
    """`is <what>, not <expected>: <what to do>` when the bytes a file starts with are another known format's (a tar
    archive: from its first TAR_MARK[1] bytes; its first bytes are a member's name, so it read as a CSV whose first
    column was named by 1,000 NUL characters and the tar header)."""
    if start[TAR_MARK[0] : TAR_MARK[1]] == b"ustar":
        return f"is a tar archive (of files, a .tar or .tar.gz), not {expected}: extract it and point at its files"
    if start[:3] == b"BZh" and start[4:10] == b"1AY&SY":
        return f"is bzip2-compressed, not {expected}: decompress it"
    text = start.removeprefix(b"\xef\xbb\xbf")
    if opens_json_array(text):  # of objects: the csv dataset reads it as JSON Lines (csv/ingest/json_array.py)
        fix = "set data.source.format: jsonl (or auto)" if expected == "CSV" else "set data.dataset: csv (it reads it)"
        return None if expected == "JSON Lines" else f"is a JSON array of objects, not {expected}: {fix}"
    if _JSON_ARRAY.match(text):
        return (f"is a JSON array of rows that are no objects, not {expected}: write each row as an object "
                "(pandas: to_json(path, orient='records'))")  # fmt: skip
    if opens_json_object(text) and expected != "JSON Lines":
        fix = (
            "set data.source.format: jsonl (or auto)" if expected == "CSV" else "set data.dataset: csv (it reads them)"
        )
        return f"is JSON Lines (a JSON object a line), not {expected}: {fix}"
    for magic, what, fix in OTHER_FORMATS:
        if start.startswith(magic) and not (expected == "Parquet" and magic == b"PAR1"):
            if magic == b"PK\x03\x04" and expected == "CSV":  # a workbook or an archive inside another file
                what, fix = "a ZIP archive inside a compressed file", "decompress it (a workbook is read as it is)"
            return f"is {what}, not {expected}: {fix}"
    return None


_JSON_OBJECT = re.compile(rb'\s*\{\s*(?:["}]|$)')  # `{"key": …`, `{}`, or `{` alone: an indented document


def opens_json_object(start: bytes) -> bool:
    """Whether a file's first bytes (after a byte-order mark) open a JSON object: JSON Lines, or one JSON document."""
    return bool(_JSON_OBJECT.match(start.removeprefix(b"\xef\xbb\xbf")))


_JSON_ARRAY = re.compile(rb'\s*\[\s*(?:[{\["\d-]|$)')
_JSON_ARRAY_OF_OBJECTS = re.compile(rb"\s*\[\s*(?:[{\]]|$)")  # `[{…`, `[]`, or `[` alone on its line (indented)


def opens_json_array(start: bytes) -> bool:
    """Whether a file's first bytes (after a byte-order mark) open a JSON array of objects (or an empty one): the
    records of pandas' to_json(orient="records") and most exports (csv/ingest/json_array.py)."""
    return bool(_JSON_ARRAY_OF_OBJECTS.match(start.removeprefix(b"\xef\xbb\xbf")))


def file_start(path: str, size: int = 16) -> bytes:
    with open(path, "rb") as file:
        return file.read(size)


def parquet_files(source_path: str) -> bool:
    """Whether the first file of a source (a file, a folder, a pattern) is Parquet, by its first bytes: data to score
    in Parquet under a config of CSV is read as Parquet, as its bytes say (`kflow predict`)."""
    try:
        first = table_files("", source_path, (), "file")[0]
        with open(first, "rb") as file:
            return file.read(4) == b"PAR1"
    except (ValueError, OSError):
        return False
