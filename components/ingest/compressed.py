"""Files that may be gzipped: told by their first bytes, not their names."""

from __future__ import annotations

import gzip
from typing import BinaryIO


def is_gzip(path: str) -> bool:
    with _open(path) as file:
        return file.read(2) == b"\x1f\x8b"


def open_source(path: str) -> BinaryIO:
    """The file's bytes, decompressed when it is gzipped."""
    return gzip.open(_open(path), "rb") if is_gzip(path) else _open(path)


def _open(path: str) -> BinaryIO:
    """A local file, or one through Beam's FileSystems (a staged copy under a gs:// or s3:// temp location)."""
    if "://" not in path:
        return open(path, "rb")  # noqa: SIM115 - the caller closes it.
    from apache_beam.io.filesystem import CompressionTypes
    from apache_beam.io.filesystems import FileSystems

    return FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)
