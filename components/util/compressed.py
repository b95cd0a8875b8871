"""Files that may be gzipped: told by their first bytes, not their names."""

from __future__ import annotations

import gzip
from typing import BinaryIO


def is_gzip(path: str) -> bool:
    with open(path, "rb") as file:
        return file.read(2) == b"\x1f\x8b"


def open_source(path: str) -> BinaryIO:
    """The file's bytes, decompressed when it is gzipped."""
    return gzip.open(path, "rb") if is_gzip(path) else open(path, "rb")  # noqa: SIM115 - the caller closes it.
