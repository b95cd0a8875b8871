"""Cutting CSV files into records without parsing them: one pass over the lines that respects quoted newlines.

A record is one line, or several when a quoted field holds line breaks (an odd number of
quote characters keeps it open). A record whose quote is still open when the file (or the
byte range being read) ends, or after MAX_RECORD_LINES lines, has an unterminated quote: it
is reported as `Record(unterminated=True)` with its first line and the following lines are read again
as records of their own, so one stray quote costs one record, not the rest of the file.

The ingest's driver cuts every file once to count records and choose chunk boundaries (byte
offsets at record ends); each Beam worker cuts its own byte range again with the same rules
and gets the same records, because a record's end depends only on the bytes before it.
Gzipped files cannot be read from an offset: each is one chunk, read from its start.
"""

from __future__ import annotations

import gzip
from collections import deque
from collections.abc import Iterator
from typing import BinaryIO, NamedTuple

MAX_RECORD_LINES = 10_000


class Record(NamedTuple):  # a tuple: one is made per record, and a frozen dataclass costs 1 µs to make
    line: int  # 1-based line number of the record's first line in its file
    next_line: int  # the line number after its last line
    start: int  # byte offset of its first line (in the decompressed stream for gzip)
    end: int  # byte offset after its last line
    raw: bytes  # the record's bytes (only its first line when its quote is unterminated)
    unterminated: bool = False


def cut(
    stream: BinaryIO,
    quote: bytes | None,
    *,
    start: int = 0,
    end: int | None = None,
    first_line: int = 1,
    delimiter: bytes = b",",
) -> Iterator[Record]:
    """The records of `stream` from byte `start` (where line `first_line` begins) up to byte `end`.

    Blank lines are no records and are skipped. `quote` None: every line is a record. A line with an odd
    number of quotes continues on the next line only when it ends inside a quoted field, one whose quote
    opens the field (`1,"two<newline>lines"`); a quote inside an unquoted field (`5'11"`) is a character of
    the field, so that line is a record of its own, as csv readers read it.
    """
    pending: deque[tuple[int, int, bytes]] = deque()
    lines = _lines(stream, start, end, first_line)

    def next_line() -> tuple[int, int, bytes] | None:
        return pending.popleft() if pending else next(lines, None)

    while (item := next_line()) is not None:
        number, offset, data = item
        if not data.rstrip(b"\r\n"):
            continue
        if quote is None or data.count(quote) % 2 == 0 or not ends_in_quoted_field(data, quote, delimiter):
            yield Record(number, number + 1, offset, offset + len(data), data)
            continue
        parts, quotes = [item], data.count(quote)
        while quotes % 2 and len(parts) < MAX_RECORD_LINES and (following := next_line()) is not None:
            parts.append(following)
            quotes += following[2].count(quote)
        if quotes % 2 == 0:
            last = parts[-1]
            raw = b"".join(part[2] for part in parts)
            yield Record(number, last[0] + 1, offset, last[1] + len(last[2]), raw)
            continue
        pending.extendleft(reversed(parts[1:]))
        yield Record(number, number + 1, offset, offset + len(data), data, unterminated=True)


def ends_in_quoted_field(line: bytes, quote: bytes, delimiter: bytes) -> bool:
    """Whether a quoted field is still open at the end of `line`: a quote opens a field only as its first
    character (after the delimiter or at the line's start), as csv readers read it; inside one, a doubled quote
    is a quote."""
    mark, separator = quote[0], delimiter[0]
    inside, at_start, index, size = False, True, 0, len(line)
    while index < size:
        byte = line[index]
        if inside:
            if byte == mark:
                if index + 1 < size and line[index + 1] == mark:
                    index += 1  # "" inside a quoted field
                else:
                    inside = False
        elif byte == mark and at_start:
            inside = True
        else:
            at_start = byte == separator
        index += 1
    return inside


def _lines(stream: BinaryIO, start: int, end: int | None, first_line: int) -> Iterator[tuple[int, int, bytes]]:
    if start:
        if stream.seekable() and not isinstance(stream, gzip.GzipFile):
            stream.seek(start)
        else:
            _skip(stream, start)
    offset, number = start, first_line
    for data in stream:
        if end is not None and offset >= end:
            return
        yield number, offset, data
        offset += len(data)
        number += 1


def _skip(stream: BinaryIO, count: int) -> None:
    while count > 0:
        block = stream.read(min(count, 1 << 20))
        if not block:
            return
        count -= len(block)
