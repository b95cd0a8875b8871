"""A JSON array of objects read as JSON Lines: what pandas' `to_json(orient="records")` (without lines=True),
`json.dump` of a list of dicts, `mongoexport --jsonArray` and most REST exports write, on one line or indented.

`open_array` streams such a file as JSON Lines, each element of the array its own line (its text as written, the
newlines of an indented element made spaces, as is a raw line break inside a string, which JSON does not allow),
so the csv ingest reads it with its JSON Lines dialect, samples, chunks and rejects included: a record's place is
FILE:N, the Nth element of the array. It decodes one element at a time (memory: an element, a 1 MB read and 64 KB
of lines, whatever the file's size). Several arrays one after another (a streaming writer's pages) are read as
one. An element that is no object becomes a line the ingest rejects (`bad_json`, with its text); an array that
breaks (a missing comma, text after its end, a file cut short, an element nested past Python's recursion limit) is
refused in one line with the element and line it broke at: no element after it can be found.
"""

from __future__ import annotations

import codecs
import io
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from kflow.components.datasets.csv.ingest.streams import ChunkStream
from kflow.components.datasets.tabular.table_files import opens_json_array
from kflow.components.ingest.compressed import open_source

_BLANK = re.compile(r"[ \t\n\r]*")
READ = 1 << 20  # bytes decoded a read
MAX_ELEMENT = 64 << 20  # characters of one element past which a broken array is refused rather than read to its end
WRITE_BYTES = 1 << 16  # lines handed to the reader at once (one element may be more)


def is_json_array(path: str) -> bool:
    with open_source(path) as stream:
        return opens_json_array(stream.read(4096))


def open_array(path: str) -> BinaryIO:
    """The JSON array file's elements as JSON Lines, an element a line (readable.open_records: when to)."""
    return io.BufferedReader(ChunkStream(elements_as_lines(path)), 1 << 16)


class BrokenArray(ValueError):
    """A JSON array that stops being JSON: no element after the break can be told apart."""


def elements_as_lines(path: str) -> Iterator[bytes]:
    """The elements of the JSON array(s) in the file, each its own line of bytes as written (undecodable bytes kept
    as they are: the ingest says which records hold them), up to WRITE_BYTES at a time; the file is opened on the
    first read and closed at the end (or when the reader is closed)."""
    with open_source(path) as stream:
        reader = _Reader(stream, Path(path).name)
        lines, size = [], 0
        for element in reader.elements():
            line = element.replace("\r", " ").replace("\n", " ").encode("utf-8", "surrogateescape") + b"\n"
            lines.append(line)
            size += len(line)
            if size >= WRITE_BYTES:
                yield b"".join(lines)
                lines, size = [], 0
        if lines:
            yield b"".join(lines)


_OUTSIDE, _OPENED, _AFTER, _COMMA = "outside", "opened", "after an element", "after a comma"


class _Reader:
    """Walks the arrays of a stream of text, one element's text at a time (`json.JSONDecoder.raw_decode` finds where
    each ends), reading more of the stream where an element runs past what is read."""

    def __init__(self, stream: BinaryIO, name: str):
        self.stream, self.name = stream, name
        self.decoder = codecs.getincrementaldecoder("utf-8")("surrogateescape")  # any bytes, back as they were
        self.text, self.at, self.done = "", 0, False
        self.lines_before, self.count = 0, 0  # newlines in the text read and let go; elements found
        self.started = False  # whether any text was read

    def elements(self) -> Iterator[str]:
        # Numbers kept as text (no int of 5,000 digits to convert); control characters in strings passed on, for
        # the JSON Lines reader to reject that record alone.
        decoder, state = json.JSONDecoder(parse_int=str, parse_float=str, parse_constant=str, strict=False), _OUTSIDE
        while True:
            self.at = _BLANK.match(self.text, self.at).end()
            if self.at == len(self.text):
                if self.done:
                    break
                self._read()
                continue
            char = self.text[self.at]
            if state == _OUTSIDE and char != "[":
                raise self._broken("text after the array's end")
            if state == _OUTSIDE or (state == _AFTER and char == ","):
                state, self.at = (_OPENED if state == _OUTSIDE else _COMMA), self.at + 1
            elif char == "]" and state in (_OPENED, _AFTER):
                state, self.at = _OUTSIDE, self.at + 1
            elif state == _AFTER:
                raise self._broken("no ',' or ']' after an element")
            elif char == "]":
                raise self._broken("a ',' before the array's end")
            else:
                try:
                    _, end = decoder.raw_decode(self.text, self.at)
                except json.JSONDecodeError as error:
                    if not self.done and len(self.text) - self.at < MAX_ELEMENT:
                        self._read()  # the element may run past what is read
                        continue
                    raise self._broken(error.msg, error.pos) from None
                except RecursionError:
                    raise self._broken("an element nested too deep to read") from None
                if self._maybe_cut(end) and not self.done and len(self.text) - self.at < MAX_ELEMENT:
                    self._read()  # `12` or `0` may be the start of `123` or `0.5`: read on
                    continue
                self.count += 1
                yield self.text[self.at : end]
                state, self.at = _AFTER, end
        if state != _OUTSIDE:
            raise self._broken("the file ends inside the array (cut short?)")

    def _maybe_cut(self, end: int) -> bool:
        """Whether the element decoded up to `end` may go on in what is not read yet: a number ends only where a
        character no number holds follows it."""
        if end == len(self.text):
            return True
        return self.text[self.at] in "-0123456789" and self.text[end] not in ",] \t\r\n"

    def _read(self) -> None:
        self.lines_before += self.text.count("\n", 0, self.at)
        self.text, self.at = self.text[self.at :], 0
        data = self.stream.read(READ)
        self.done = not data
        text = self.decoder.decode(data, final=self.done)
        if not self.started:  # a byte-order mark opens the file only
            text, self.started = text.removeprefix("\ufeff"), bool(text)
        self.text += text

    def _broken(self, why: str, at: int | None = None) -> BrokenArray:
        at = self.at if at is None else at
        line = self.lines_before + self.text.count("\n", 0, at) + 1
        return BrokenArray(
            f"data.source.path: {self.name} is a JSON array that breaks at its element {self.count + 1} (line "
            f"{line}): {why}; nothing after it can be read"
        )
