"""TFRecord files without TensorFlow, for the processes that only write or read records (an ingest's workers).

The format is TensorFlow's (a record: its length as a little-endian u64, the masked crc32c of those 8 bytes,
the data, the masked crc32c of the data; crc32c in C through google-crc32c). Records are framed a batch at a
time (the crcs in one pass, the masks in NumPy) and a gzipped file is compressed on threads of its own (two by
default), which zlib lets run beside the caller's Python: the caller builds the next records while the last are
compressed. A gzipped file is one gzip stream at zlib's default level, as TensorFlow's GZIP option writes,
with no time or name in its header: the same records give the same bytes. zlib-ng deflates it: zlib's format
and levels, 2-3x faster than zlib at the same level and size (bench/README.md). Reading uses Beam's own framing
and checks (`apache_beam.io.tfrecordio`, what `ReadFromTFRecord` uses). `tf.data.TFRecordDataset` reads these
files (tests/components/ingest/test_tfrecord_file.py).
"""

from __future__ import annotations

import struct
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import BinaryIO

import google_crc32c
import numpy as np
from apache_beam.io.tfrecordio import _TFRecordUtil
from zlib_ng import zlib_ng as zlib

_FLUSH_BYTES = 1 << 20  # Records gathered before they are framed and handed to zlib: a call per record costs more.
_QUEUED = 4  # Blocks being deflated or waiting to be written: the writer holds a few MB at most.
_WINDOW_BYTES = 32 * 1024  # deflate's window: what a block may refer back to
_GZIP_HEADER = bytes.fromhex("1f8b0800000000000003")  # deflate, no flags, no time, Unix: what zlib writes
_GZIP_TRAILER = struct.Struct("<II")
_MASK_DELTA = np.uint32(0xA282EAD8)
_LENGTH, _CRC = struct.Struct("<Q"), struct.Struct("<I")


def _masked(crcs: np.ndarray) -> np.ndarray:
    """TFRecord's masked crc32c (`MaskedCrc` in tensorflow/core/lib/hash/crc32c.h), wrapping in 32 bits."""
    return ((crcs >> np.uint32(15)) | (crcs << np.uint32(17))) + _MASK_DELTA


def _header(length: int) -> bytes:
    """A record's length and its crc (kept in _HEADERS)."""
    encoded = _LENGTH.pack(length)
    header = encoded + _CRC.pack(_TFRecordUtil._masked_crc32c(encoded))
    if len(_HEADERS) < _MOST_HEADERS:
        _HEADERS[length] = header
    return header


def frame(records: list[bytes]) -> bytes:
    """The records as TFRecord bytes, uncompressed."""
    crcs = np.fromiter(map(google_crc32c.value, records), np.uint32, len(records))
    footers = _masked(crcs).astype("<u4").tobytes()
    pieces: list[bytes] = [b""] * (3 * len(records))
    pieces[0::3] = [_HEADERS.get(len(record)) or _header(len(record)) for record in records]
    pieces[1::3] = records
    pieces[2::3] = [footers[start : start + 4] for start in range(0, len(footers), 4)]
    return b"".join(pieces)


_HEADERS: dict[int, bytes] = {}  # By length: a dataset's records share few lengths.
_MOST_HEADERS = 1 << 16


class TFRecordWriter:
    """`with TFRecordWriter(path) as writer: writer.write(record)` (or `writer.write_many(records)`); gzipped
    unless `gzip=False`, on `gzip_threads` threads."""

    def __init__(self, path: str | Path, gzip: bool = True, gzip_threads: int = 2):
        self._file: BinaryIO = open(path, "wb")  # noqa: SIM115 (closed by close())
        self._pending: list[bytes] = []
        self._pending_bytes = 0
        self._compressor: _Compressor | None = _Compressor(self._file, gzip_threads) if gzip else None

    def write(self, record: bytes) -> None:
        self._pending.append(record)
        self._pending_bytes += len(record)
        if self._pending_bytes >= _FLUSH_BYTES:
            self._flush()

    def write_many(self, records: list[bytes]) -> None:
        self._pending += records
        self._pending_bytes += sum(map(len, records))
        if self._pending_bytes >= _FLUSH_BYTES:
            self._flush()

    def _flush(self) -> None:
        if not self._pending:
            return
        data = frame(self._pending)
        self._pending, self._pending_bytes = [], 0
        if self._compressor is None:
            self._file.write(data)
        else:
            self._compressor.put(data)

    def close(self) -> None:
        if self._file.closed:
            return
        try:
            self._flush()
        finally:
            try:
                if self._compressor is not None:
                    self._compressor.finish()
            finally:
                self._file.close()

    def __enter__(self) -> TFRecordWriter:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


class _Compressor:
    """Gzips blocks into one gzip stream on threads of their own (zlib's C code runs beside the caller's Python
    and beside each other), written in order.

    Each block is deflated on its own, primed with the 32 KB before it (as pigz does: the same matches a single
    stream finds), and ends on a byte boundary (a sync flush), so the blocks join into one deflate stream; the
    gzip header has no time or name, and the trailer holds the whole stream's crc32 and size."""

    def __init__(self, file: BinaryIO, threads: int):
        self._file = file
        self._pool = ThreadPoolExecutor(threads, thread_name_prefix="tfrecord-gzip")
        self._deflating: deque[Future[bytes]] = deque()
        self._crc = self._size = 0
        self._window = b""
        file.write(_GZIP_HEADER)

    def put(self, block: bytes) -> None:
        self._crc = zlib.crc32(block, self._crc)
        self._size += len(block)
        self._deflating.append(self._pool.submit(_deflate, block, self._window, False))
        self._window = block[-_WINDOW_BYTES:]
        while len(self._deflating) > _QUEUED:
            self._file.write(self._deflating.popleft().result())

    def finish(self) -> None:
        try:
            self._deflating.append(self._pool.submit(_deflate, b"", self._window, True))
            while self._deflating:
                self._file.write(self._deflating.popleft().result())
            self._file.write(_GZIP_TRAILER.pack(self._crc, self._size & 0xFFFFFFFF))
        finally:
            self._pool.shutdown(wait=True, cancel_futures=True)


def _deflate(block: bytes, window: bytes, last: bool) -> bytes:
    """`block` as raw deflate data that follows `window` in a stream: sync-flushed, or ending it when `last`."""
    primed = {"zdict": window} if window else {}
    deflate = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, -zlib.MAX_WBITS, **primed)
    return deflate.compress(block) + deflate.flush(zlib.Z_FINISH if last else zlib.Z_SYNC_FLUSH)


def read_records(stream: BinaryIO) -> Iterator[tuple[int, bytes | None]]:
    """(offset, record) of the uncompressed TFRecord stream from where it stands; a broken record (framing or crc)
    comes as (offset, None) and ends it, as nothing after it can be framed."""
    while True:
        offset = stream.tell()
        try:
            record = _TFRecordUtil.read_record(stream)
        except ValueError:
            yield offset, None
            return
        if record is None:
            return
        yield offset, record
