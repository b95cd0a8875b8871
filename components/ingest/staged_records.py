"""Staged records as data, not code: the ingest's intermediate files, in batches of typed columns.

A staged file may sit in a shared `--temp_location`; a pickle there is code that whoever can write the
location runs in every worker that reads it. This format holds only numbers, strings and bytes:

    b"KFSR1", then per batch: <count: u32> <body size: u32> <body>
    body: one column after the other; `u64`/`i64` columns as little-endian integers; `bytes` columns as
    b"l", their lengths (u32), their bytes joined; `str` columns (UTF-8) the same, or, when no value holds
    a NUL, as b"j", the size (u32) and the values joined by NULs (split in one call when read).

Rows are flat tuples of the declared kinds. A batch is what a reader holds at a time: a merge reads one
batch of each of its files.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from typing import IO, Any

import numpy as np

MAGIC = b"KFSR1"
_HEADER = struct.Struct("<II")
_INTEGERS = {"u64": np.dtype("<u8"), "i64": np.dtype("<i8")}
_LENGTH = np.dtype("<u4")
_SIZE = struct.Struct("<I")
_JOINED, _LENGTHS = b"j", b"l"  # A string column as one NUL-joined blob, or as lengths and bytes.


def write_rows(file: IO[bytes], rows: Sequence[tuple], kinds: tuple[str, ...], batch: int) -> None:
    file.write(MAGIC)
    for start in range(0, len(rows), batch):
        part = rows[start : start + batch]
        columns = zip(*part, strict=True)  # Rows of unequal length are an error, not a silent cut.
        body = b"".join(_column(kind, column) for kind, column in zip(kinds, columns, strict=True))
        file.write(_HEADER.pack(len(part), len(body)))
        file.write(body)


def _column(kind: str, values: tuple) -> bytes:
    if kind in _INTEGERS:
        return np.array(values, dtype=_INTEGERS[kind]).tobytes()
    if kind == "str":
        joined = "\0".join(values)
        if joined.count("\0") == len(values) - 1:  # No string holds a NUL: one blob, split in C when read.
            blob = joined.encode()
            return _JOINED + _SIZE.pack(len(blob)) + blob
        values = tuple(value.encode() for value in values)
    return _LENGTHS + np.fromiter(map(len, values), _LENGTH, len(values)).tobytes() + b"".join(values)


def read_rows(file: IO[bytes], kinds: tuple[str, ...]) -> Iterator[tuple]:
    for rows in read_batches(file, kinds):
        yield from rows


def read_batches(file: IO[bytes], kinds: tuple[str, ...]) -> Iterator[list[tuple]]:
    """The rows, a batch (as written) at a time."""
    for columns in read_columns(file, kinds, range(len(kinds))):
        lists = (column.tolist() if isinstance(column, np.ndarray) else column for column in columns)
        yield list(zip(*lists, strict=True))


def read_columns(file: IO[bytes], kinds: tuple[str, ...], wanted: Sequence[int]) -> Iterator[tuple]:
    """Per batch, the columns numbered `wanted` (integers as NumPy arrays); the others are skipped, not decoded."""
    wanted = set(wanted)
    if _read_exactly(file, len(MAGIC)) != MAGIC:
        raise ValueError(f"{getattr(file, 'name', 'a staged file')} is not a kflow staged-records file")
    while header := file.read(_HEADER.size):
        if len(header) < _HEADER.size:
            header += _read_exactly(file, _HEADER.size - len(header))
        count, size = _HEADER.unpack(header)
        body = _read_exactly(file, size)
        columns, offset = [], 0
        for number, kind in enumerate(kinds):
            column, offset = _parse(kind, body, offset, count, number in wanted)
            if number in wanted:
                columns.append(column)
        if offset != size:
            raise ValueError(f"a staged batch of {size} bytes holds {offset} bytes of columns")
        yield tuple(columns)


def _parse(kind: str, body: bytes, offset: int, count: int, decode: bool = True) -> tuple[Any, int]:
    """The column at `offset` (None unless `decode`) and the offset after it."""
    if kind in _INTEGERS:
        dtype = _INTEGERS[kind]
        values = np.frombuffer(body, dtype, count, offset) if decode else None
        return values, offset + count * dtype.itemsize
    layout, offset = body[offset : offset + 1], offset + 1
    if layout == _JOINED:
        (size,) = _SIZE.unpack_from(body, offset)
        offset += _SIZE.size
        values = (body[offset : offset + size].decode().split("\0") if count else []) if decode else None
        return values, offset + size
    lengths = np.frombuffer(body, _LENGTH, count, offset)
    offset += count * _LENGTH.itemsize
    if not decode:
        return None, offset + int(lengths.sum(dtype=np.int64))
    ends = (np.cumsum(lengths, dtype=np.int64) + offset).tolist()
    starts = [offset, *ends[:-1]]
    view = memoryview(body)
    if kind == "str":
        values = [str(view[start:end], "utf-8") for start, end in zip(starts, ends, strict=True)]
    else:
        values = [body[start:end] for start, end in zip(starts, ends, strict=True)]
    return values, ends[-1] if ends else offset


def _read_exactly(file: IO[bytes], size: int) -> bytes:
    data = file.read(size)
    while len(data) < size:
        more = file.read(size - len(data))
        if not more:
            raise ValueError(f"a staged file ends {size - len(data)} bytes short of its batch")
        data += more
    return data
