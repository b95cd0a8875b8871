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
        self._chunks, self._pending, self._on_close = chunks, b"", on_close

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while not self._pending:
            chunk = next(self._chunks, None)
            if chunk is None:
                return 0
            self._pending = chunk
        size = min(len(buffer), len(self._pending))
        buffer[:size] = self._pending[:size]
        self._pending = self._pending[size:]
        return size

    def close(self) -> None:
        if not self.closed:
            close = getattr(self._chunks, "close", None)
            if close is not None:
                close()
            if self._on_close is not None:
                self._on_close()
        super().close()
