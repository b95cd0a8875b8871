"""The folder an ingest's stages hand each other files in, and the staged files themselves (staged_records.py:
data, not code): a chunk's records, rejects, a part file's records, read back a batch at a time."""

from __future__ import annotations

import logging
import os
import shutil
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Any, BinaryIO

import numpy as np
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import GoogleCloudOptions, PipelineOptions

from kflow.components.ingest.compressed import open_source
from kflow.components.ingest.split_plan import SortKey
from kflow.components.ingest.staged_records import read_batches, read_columns, write_rows
from kflow.pipeline.dsl.scratch import scratch_dir

log = logging.getLogger(__name__)

# Bytes a batch of staged rows: a merge holds a batch of each file it merges (one per chunk); a file read on its
# own (a chunk's records) can hold more, and each batch costs a few calls however many rows it holds.
MERGED_BATCH_BYTES = 32 * 2**10
READ_ALONE_BATCH_BYTES = 512 * 2**10
_MOST_ROWS = 8192


class Staging:
    """A folder for what an ingest's stages hand each other, removed when the `with` block ends.

    Under the pipeline's --temp_location when the Beam options give one (through Beam's
    FileSystems, so gs://, s3:// or hdfs:// folders work and a distributed runner's workers
    share it); else a local temporary folder (the DirectRunner's workers share this disk).
    """

    def __init__(self, beam_args: Sequence[str] = ()):
        temp_location = PipelineOptions(list(beam_args)).view_as(GoogleCloudOptions).temp_location
        self.local = not temp_location
        if self.local:
            self.root = scratch_dir("ingest")
        else:
            self.root = FileSystems.join(temp_location, f"kflow-ingest-{uuid.uuid4().hex}")

    def path(self, name: str) -> str:
        return FileSystems.join(self.root, name)

    def plain_copy(self, source: str, name: str, opener: Callable[[str], BinaryIO] = open_source) -> str:
        """Decompresses the compressed file `source` (compressed.open_source, or what `opener` reads it as) into the
        staging folder as `name`, streaming; returns the copy's path. Its records can then be cut into chunks by
        offset, which a compressed stream does not allow."""
        copy = self.path(name)
        log.info("ingest: writing %s out into the staging folder", source)
        with opener(source) as stream, FileSystems.create(copy) as target:
            shutil.copyfileobj(stream, target, 1 << 20)
        return copy

    def __enter__(self) -> Staging:
        return self

    def __exit__(self, *_: Any) -> None:
        if self.local:
            shutil.rmtree(self.root, ignore_errors=True)
            return
        matched = FileSystems.match([self.path("*")])[0].metadata_list
        if matched:
            FileSystems.delete([metadata.path for metadata in matched])
        if "://" not in self.root and os.path.isdir(self.root):  # A local --temp_location: its folder too.
            os.rmdir(self.root)


# Staged files (staged_records.py: data, not code): a chunk's records, a reject, a part file's records.
CHUNK_ROWS = ("u64", "str", "str", "bytes")  # the sort key (hash, key), the group, the serialised Example
REJECT_ROWS = ("str", "i64", "str")  # the position (file, line or index), the JSON line
PART_ROWS = ("str", "bytes")  # the key, the serialised Example


def write_staged(path: str, rows: Sequence[tuple], kinds: tuple[str, ...], merged: bool = True) -> None:
    """In batches of about MERGED_BATCH_BYTES, or READ_ALONE_BATCH_BYTES for a file that is not `merged` with
    others: `read_staged` holds one batch at a time."""
    with FileSystems.create(path) as file:
        write_rows(file, rows, kinds, batch_rows(rows, MERGED_BATCH_BYTES if merged else READ_ALONE_BATCH_BYTES))


def batch_rows(rows: Sequence[tuple], batch_bytes: int) -> int:
    """Rows a batch of about `batch_bytes`, from the size of the first rows' last value (the record, the line)."""
    sample = rows[:256]
    row_bytes = 16 + sum(len(row[-1]) for row in sample) / max(1, len(sample))
    return max(1, min(_MOST_ROWS, int(batch_bytes // row_bytes)))


def read_staged(path: str, kinds: tuple[str, ...]) -> Iterator[tuple]:
    for rows in read_staged_batches(path, kinds):
        yield from rows


def read_staged_batches(path: str, kinds: tuple[str, ...]) -> Iterator[list[tuple]]:
    with FileSystems.open(path) as file:
        yield from read_batches(file, kinds)


def read_chunk(path: str) -> Iterator[tuple[SortKey, str, bytes]]:
    for hashed, key, group, record in read_staged(path, CHUNK_ROWS):
        yield (hashed, key), group, record


def read_chunk_keys(path: str) -> Iterator[tuple[np.ndarray, list[str], list[str]]]:
    """A chunk's hashes, keys and groups, a batch at a time, without decoding its records."""
    with FileSystems.open(path) as file:
        yield from read_columns(file, CHUNK_ROWS, (0, 1, 2))
