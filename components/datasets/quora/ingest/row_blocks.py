"""The Quora CSV's rows found a block of lines at a time: NumPy finds the lines, their quotes and their blanks; only
a row whose quotes a line leaves open is followed in Python, line by line, as `cut` follows it.

A row is a non-blank line, and when its quotes are still open (an odd count) the lines after it, until the quotes
close, the next line starts like a row (`<20 hex digits>,`) or the lines end; then it is unterminated. A line that
starts like a row therefore always starts one: a block is cut only at a row's first line, and a row still open at
a block's end is carried to the next block whole.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np

BLOCK_BYTES = 1 << 20
ROW_START = re.compile(rb"[0-9a-fA-F]{20},")  # At a line's start: `match`, from the line's position.
_NEWLINE, _QUOTE, _COMMA = ord("\n"), ord('"'), ord(",")
_BLANK = np.zeros(256, bool)
_BLANK[list(b" \t\n\r\x0b\x0c")] = True  # What bytes.strip() removes.


@dataclass(frozen=True)
class RowBlock:
    """A block's rows, in order: their first line's number, their bytes in the file ([starts, ends)), whether their
    quotes are unterminated."""

    data: bytes
    offset: int  # of data in the file
    lines: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    unterminated: np.ndarray

    def raw(self, row: int) -> bytes:
        return self.data[self.starts[row] - self.offset : self.ends[row] - self.offset]

    def key_stops(self, rows: np.ndarray) -> np.ndarray:
        """Where the key of each of `rows` ends in `data`: its first comma, else the row's end."""
        commas = np.flatnonzero(np.frombuffer(self.data, np.uint8) == _COMMA)
        starts, ends = self.starts[rows] - self.offset, self.ends[rows] - self.offset
        first = np.append(commas, len(self.data))[np.searchsorted(commas, starts)]
        return np.minimum(first, ends)


def row_blocks(file: BinaryIO, first_line: int, offset: int) -> Iterator[RowBlock]:
    """The rows of `file` from where it stands (line `first_line`, byte `offset`), a block of BLOCK_BYTES at a time."""
    carried = b""
    while True:
        more = file.read(BLOCK_BYTES)
        data = carried + more
        if not data:
            return
        final = not more
        end = len(data) if final else data.rfind(b"\n") + 1
        if end == 0:  # No whole line yet: read on.
            carried = data
            continue
        block, carried_from = _rows(data[:end], offset, first_line, final)
        if block is not None:
            yield block
        carried = data[carried_from:]
        first_line += data.count(b"\n", 0, carried_from)
        offset += carried_from
        if final and not carried:
            return


def _rows(data: bytes, offset: int, first_line: int, final: bool) -> tuple[RowBlock | None, int]:
    """The rows of the whole lines in `data`, and where the bytes not taken start (a row open at the end of a block
    that is not the file's last)."""
    array = np.frombuffer(data, np.uint8)
    ends = np.flatnonzero(array == _NEWLINE) + 1
    if not len(ends) or ends[-1] != len(data):
        ends = np.append(ends, len(data))  # The file's last line, without a newline.
    starts = np.concatenate(([0], ends[:-1]))
    quote_positions = np.flatnonzero(array == _QUOTE)
    quotes = np.searchsorted(quote_positions, ends) - np.searchsorted(quote_positions, starts)
    filled = ~_BLANK[array[starts]]  # A line that starts with a blank is looked at whole.
    for line in np.flatnonzero(~filled).tolist():
        filled[line] = bool(data[starts[line] : ends[line]].strip())
    last = np.arange(len(starts))  # Each row's last line (a line of its own unless its quotes stay open).
    absorbed = np.zeros(len(starts), bool)
    unterminated = np.zeros(len(starts), bool)
    taken = len(data)
    for line in np.flatnonzero(quotes % 2).tolist():
        if absorbed[line]:
            continue
        count, following = int(quotes[line]), line + 1
        while count % 2 and following < len(starts) and not ROW_START.match(data, starts[following]):
            count += int(quotes[following])
            absorbed[following] = True
            following += 1
        if count % 2 and following == len(starts) and not final:
            taken = int(starts[line])  # Open at the block's end: this row goes whole into the next block.
            filled[line:] = False
            break
        last[line], unterminated[line] = following - 1, bool(count % 2)
    rows = np.flatnonzero(filled & ~absorbed)
    if not len(rows):
        return None, taken
    return (
        RowBlock(
            data=data,
            offset=offset,
            lines=rows + first_line,
            starts=starts[rows] + offset,
            ends=ends[last[rows]] + offset,
            unterminated=unterminated[rows],
        ),
        taken,
    )
