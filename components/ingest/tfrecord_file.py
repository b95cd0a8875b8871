"""TFRecord files without TensorFlow, for the processes that only write or read records (an ingest's workers).

The framing and its checks are Beam's own (`apache_beam.io.tfrecordio`, what `WriteToTFRecord` and
`ReadFromTFRecord` use; crc32c in C through google-crc32c). A gzipped file is one gzip stream at zlib's
default level, as TensorFlow's GZIP option writes, with no time or name in its header: the same records give
the same bytes. `tf.data.TFRecordDataset` reads these files (tests/components/ingest/test_tfrecord_file.py).
"""

from __future__ import annotations

import io
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from apache_beam.io.tfrecordio import _TFRecordUtil

_FLUSH_BYTES = 1 << 20  # Framed records gathered before one call into zlib: a call per record costs more.


class TFRecordWriter:
    """`with TFRecordWriter(path) as writer: writer.write(record)`; gzipped unless `gzip=False`."""

    def __init__(self, path: str | Path, gzip: bool = True):
        self._file: BinaryIO = open(path, "wb")  # noqa: SIM115 (closed by close())
        self._zip = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, 16 + zlib.MAX_WBITS) if gzip else None
        self._pending = io.BytesIO()

    def write(self, record: bytes) -> None:
        _TFRecordUtil.write_record(self._pending, record)
        if self._pending.tell() >= _FLUSH_BYTES:
            self._flush()

    def _flush(self) -> None:
        data = self._pending.getvalue()
        self._file.write(self._zip.compress(data) if self._zip else data)
        self._pending = io.BytesIO()

    def close(self) -> None:
        if self._file.closed:
            return
        try:
            self._flush()
            if self._zip:
                self._file.write(self._zip.flush())
        finally:
            self._file.close()

    def __enter__(self) -> TFRecordWriter:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


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
