"""The MNIST ingest executor: reads a source, validates, splits and writes it as TFRecord Examples.

The driver streams the source a chunk of a few thousand records at a time and stages each
chunk as an .npz file under the pipeline's temp location (so memory stays flat and workers on
other machines can read it); the shared Beam ingest (components/ingest/beam_ingest.py) then
validates, splits and serialises each chunk in a worker (`ChunkProcessor`), writes the shards
and accounts for every record, as for every other dataset. Records past the end of the shorter
of a split's images and labels are rejected by the driver.
"""

from __future__ import annotations

import io
import itertools
import logging
from dataclasses import dataclass
from typing import Any

import numpy as np
from apache_beam.io.filesystems import FileSystems
from tensorflow_metadata.proto.v0 import schema_pb2

from kflow.components.datasets.bundle import SOURCE_TEST_SPLIT
from kflow.components.datasets.mnist.ingest.records import (
    TEST_SPLIT,
    Chunk,
    RecordLayout,
    SplitPlan,
    serialize_records,
    split_chunk,
)
from kflow.components.datasets.mnist.ingest.sources import SourceSplit, read_source
from kflow.components.ingest import ingest_records, ingest_staging
from kflow.components.ingest.ingest_job import IngestJob
from kflow.components.util.schema import annotation_tags, int_domain
from kflow.pipeline.dsl.artifacts import Schema

log = logging.getLogger(__name__)

CHUNK_SIZE = 4000
"""Records per Beam element: large enough to amortise Beam's per-element cost, small enough to spread the work."""

# The features the ingest writes, and their types, which the schema must declare.
_FEATURES = {"image": schema_pb2.BYTES, "label": schema_pb2.INT, "key": schema_pb2.BYTES}


def run(**parameters: Any) -> dict[str, Any]:
    """Ingests MNIST into `examples`, copies its schema into `schema` and lists refused records in `rejects`
    (`parameters`: an IngestJob's: MNIST has none of its own).

    Returns the key figures: {"read": N, "<split>": n, ..., "rejected": r, "source_format": ...}.
    """
    job = IngestJob(**parameters)
    split = SOURCE_TEST_SPLIT if job.split is None else job.split
    plan = SplitPlan.from_parameters(split)
    _check_max_records(job.max_records)
    layout = _record_layout(ingest_records.copy_schema("mnist", job.schema, _FEATURES), job.schema)

    source = read_source(job.source_path, job.source_format).limit(job.max_records)
    log.info("ingest: reading %s (%s)", source.location, source.format)

    # The staged chunks live until the pipeline has finished, where every worker reads them.
    with ingest_staging.Staging(job.beam_args) as staging:
        chunks, extra_rejects, read = [], [], 0
        for source_split in source.splits:
            staged = _stage(source_split, staging)
            chunks += staged.chunks
            extra_rejects += source_split.unmatched_rejects(staged.images, staged.labels)
            read += source_split.size(staged.images, staged.labels)
        if read == 0:
            raise ValueError(f"the source {source.location} ({source.format}) holds no records")
        log.info("ingest: read %d records from %s (%s)", read, source.location, source.format)
        stats = job.pipeline(
            chunks=chunks,
            process_chunk=ChunkProcessor(plan, layout, staging),
            splits=plan.splits,
            read=read,
            extra_rejects=extra_rejects,
            staging=staging,
        )
    stats["accepted"] = {name: stats["accepted"][name] for name in [*split, TEST_SPLIT]}  # In the order given.
    summary = job.summary(stats)
    written = " ".join(
        f"{name}={count} ({len(list(job.examples.split_uri(name).glob('*.gz')))} shards)"
        for name, count in stats["accepted"].items()
    )
    log.info("ingest: wrote %s, rejected %d", written, summary["rejected"])
    return {**summary, "source_format": source.format}


def _check_max_records(max_records: int | None) -> None:
    if max_records is not None and (
        isinstance(max_records, bool) or not isinstance(max_records, int) or max_records < 1
    ):
        raise ValueError(f"max_records must be a positive integer or None, got {max_records!r}")


def _record_layout(proto: schema_pb2.Schema, schema: Schema) -> RecordLayout:
    """What the MNIST schema says a valid record is: the image's shape and dtype, the label's domain."""
    tags = annotation_tags(proto, "image")
    if "shape" not in tags or "dtype" not in tags:
        raise ValueError(f"{schema.file}: feature 'image' needs the annotation tags shape=... and dtype=...")
    label_min, label_max = int_domain(proto, "label")
    image_shape = tuple(int(size) for size in tags["shape"].split(","))
    return RecordLayout(image_shape, tags["dtype"], label_min, label_max)


@dataclass(frozen=True)
class _ChunkRef:
    """Records [start, start + count) of a source split, staged in `file`, and where they come from."""

    source_split: str
    start: int
    file: str
    image_origin: str
    label_origin: str


@dataclass
class _Staged:
    """The staged chunks of a source split, and how many images and labels its streams held."""

    chunks: list[_ChunkRef]
    images: int = 0
    labels: int = 0


def _stage(source_split: SourceSplit, staging: ingest_staging.Staging) -> _Staged:
    """Streams a source split and saves each chunk of its paired records as an .npz file."""
    staged = _Staged([])
    images = source_split.images.blocks(CHUNK_SIZE)
    labels = source_split.labels.blocks(CHUNK_SIZE)
    positions = source_split.positions.blocks(CHUNK_SIZE) if source_split.positions is not None else None
    for image_block, label_block in itertools.zip_longest(images, labels, fillvalue=()):
        start, paired = min(staged.images, staged.labels), min(len(image_block), len(label_block))
        staged.images += len(image_block)
        staged.labels += len(label_block)
        if not paired:
            continue  # Past the end of the shorter stream: the driver rejects these records.
        arrays = {"images": image_block[:paired], "labels": label_block[:paired]}
        if positions is not None:
            arrays["positions"] = next(positions)[:paired]
        file = staging.path(f"{source_split.name}-{start:010d}.npz")
        with FileSystems.create(file) as out:
            np.savez(out, allow_pickle=False, **arrays)  # Data, not code: the sources hold no object arrays.
        staged.chunks.append(
            _ChunkRef(source_split.name, start, file, source_split.images.origin, source_split.labels.origin)
        )
    return staged


class ChunkProcessor:
    """The per-chunk work of the shared ingest: validate, split and serialise the records of a staged chunk."""

    def __init__(self, plan: SplitPlan, layout: RecordLayout, staging: ingest_staging.Staging):
        self._plan = plan
        self._layout = layout
        self._staging = staging

    def __call__(self, ref: _ChunkRef) -> tuple[list[ingest_records.Accepted], list[dict[str, Any]]]:
        with FileSystems.open(ref.file) as file:
            arrays = np.load(io.BytesIO(file.read()), allow_pickle=False)
            images, labels = arrays["images"], arrays["labels"]
            positions = arrays["positions"] if "positions" in arrays else None
        chunk = Chunk(ref.source_split, ref.start, images, labels, ref.image_origin, ref.label_origin, positions)
        by_split, found_rejects = split_chunk(chunk, self._plan, self._layout)
        accepted = [
            (key, split, record)
            for split, indices in by_split.items()
            for key, record in serialize_records(ref.source_split, indices, images, labels, ref.start)
        ]
        return accepted, found_rejects
