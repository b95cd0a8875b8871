"""A raw byte stream over chunks of bytes a generator yields: how a JSON array's elements (json_array.py) and a
workbook's rows (workbook.py) are read as the lines of a file."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator


class ChunkStream(io.RawIOBase):
    """The bytes `chunks` yields, in order; closing it closes the generator (and its `with` blocks), then calls
    `on_close`. Wrap it in io.BufferedReader to read lines."""

    def __init__(self, chunks: Iterator[bytes], on_close: Callable[[], object] | None = None):
        super().__init__()
        self._chunks, self._on_close = chunks, on_close
        self._pending, self._at = memoryview(b""), 0  # the chunk being read, and how far (no copy a read)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while self._at == len(self._pending):
            chunk = next(self._chunks, None)
            if chunk is None:
                return 0
            self._pending, self._at = memoryview(chunk), 0
        size = min(len(buffer), len(self._pending) - self._at)
        buffer[:size] = self._pending[self._at : self._at + size]
        self._at += size
        return size

    def close(self) -> None:
        if not self.closed:
            close = getattr(self._chunks, "close", None)
            if close is not None:
                close()
            if self._on_close is not None:
                self._on_close()
        super().close()
