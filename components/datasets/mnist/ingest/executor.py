"""The MNIST ingest executor: reads a source, validates, splits and writes it as TFRecord Examples.

The driver reads the source into numpy arrays and stages them as .npy files, cut into
chunks of a few thousand records; the shared Beam ingest (components/util/beam_ingest.py)
then validates, splits and serialises each chunk in a worker (`ChunkProcessor`, which
memory-maps the staged arrays instead of shipping images through the pipeline graph),
writes the shards and accounts for every record, as for every other dataset. Records
past the end of the shorter of a split's images and labels are rejected by the driver.
"""

from __future__ import annotations

import io
import logging
from dataclasses import dataclass
from typing import Any

import numpy as np
from apache_beam.io.filesystems import FileSystems
from tensorflow_metadata.proto.v0 import schema_pb2

from kflow.components.datasets.mnist.ingest.records import (
    TEST_SPLIT,
    Chunk,
    RecordLayout,
    SplitPlan,
    serialize_records,
    split_chunk,
)
from kflow.components.datasets.mnist.ingest.sources import SourceSplit, read_source
from kflow.components.util import beam_ingest
from kflow.components.util.schema import annotation_tags, int_domain
from kflow.pipeline.dsl.artifacts import Examples, Rejects, Schema

log = logging.getLogger(__name__)

DEFAULT_SPLIT = {"train": 9, "eval": 1}
CHUNK_SIZE = 4000
"""Records per Beam element: large enough to amortise Beam's per-element cost, small enough to spread the work."""

# The features the ingest writes, and their types, which the schema must declare.
_FEATURES = {"image": schema_pb2.BYTES, "label": schema_pb2.INT, "key": schema_pb2.BYTES}


def run(
    *,
    examples: Examples,
    schema: Schema,
    rejects: Rejects,
    source_path: str | None = None,
    source_format: str = "auto",
    split: dict[str, int] | None = None,
    shards_per_split: int = 0,
    max_records: int | None = None,
    max_invalid_fraction: float = 0.01,
    beam_args: list[str] | tuple[str, ...] = (),
) -> dict[str, Any]:
    """Ingests MNIST into `examples`, copies its schema into `schema` and lists refused records in `rejects`.

    Returns the key figures: {"read": N, "<split>": n, ..., "rejected": r, "source_format": ...}.
    """
    split = DEFAULT_SPLIT if split is None else split
    plan = SplitPlan.from_parameters(split)
    _check_limits(max_records, max_invalid_fraction)
    layout = _record_layout(beam_ingest.copy_schema("mnist", schema, _FEATURES), schema)

    source = read_source(source_path, source_format).limit(max_records)
    read = source.size
    if read == 0:
        raise ValueError(f"the source {source.location} ({source.format}) holds no records")
    log.info("ingest: read %d records from %s (%s)", read, source.location, source.format)

    # The staged arrays live until the pipeline has finished, where every worker reads them.
    with beam_ingest.Staging(beam_args) as staging:
        stats = beam_ingest.run_ingest_pipeline(
            chunks=[chunk for source_split in source.splits for chunk in _stage(source_split, staging)],
            process_chunk=ChunkProcessor(plan, layout, staging),
            splits=plan.splits,
            shards=shards_per_split,
            read=read,
            examples=examples,
            rejects=rejects,
            beam_args=beam_args,
            extra_rejects=[entry for source_split in source.splits for entry in source_split.unmatched_rejects()],
            staging=staging,
        )
    stats["accepted"] = {name: stats["accepted"][name] for name in [*split, TEST_SPLIT]}  # In the order given.
    summary = beam_ingest.ingest_summary(stats, max_invalid_fraction, rejects)
    written = " ".join(
        f"{name}={count} ({len(list(examples.split_uri(name).glob('*.gz')))} shards)"
        for name, count in stats["accepted"].items()
    )
    log.info("ingest: wrote %s, rejected %d", written, summary["rejected"])
    return {**summary, "source_format": source.format}


def _check_limits(max_records: int | None, max_invalid_fraction: float) -> None:
    if max_records is not None and (
        isinstance(max_records, bool) or not isinstance(max_records, int) or max_records < 1
    ):
        raise ValueError(f"max_records must be a positive integer or None, got {max_records!r}")
    if (
        isinstance(max_invalid_fraction, bool)
        or not isinstance(max_invalid_fraction, int | float)
        or not 0 <= max_invalid_fraction <= 1
    ):
        raise ValueError(f"max_invalid_fraction must be a number from 0 to 1, got {max_invalid_fraction!r}")


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
    """Records [start, stop) of a staged source split, and where they come from."""

    source_split: str
    start: int
    stop: int
    image_origin: str
    label_origin: str
    has_positions: bool


def _stage(source_split: SourceSplit, staging: beam_ingest.Staging) -> list[_ChunkRef]:
    """Saves the paired records of a source split as .npy files and returns its chunks."""
    paired = source_split.paired
    arrays = {"images": source_split.images, "labels": source_split.labels, "positions": source_split.positions}
    for name, array in arrays.items():
        if array is not None:
            with FileSystems.create(_StagedArrays.file(staging, source_split.name, name)) as file:
                np.save(file, array[:paired], allow_pickle=array.dtype == object)
    return [
        _ChunkRef(
            source_split=source_split.name,
            start=start,
            stop=min(start + CHUNK_SIZE, paired),
            image_origin=source_split.image_origin,
            label_origin=source_split.label_origin,
            has_positions=source_split.positions is not None,
        )
        for start in range(0, paired, CHUNK_SIZE)
    ]


class _StagedArrays:
    """The staged arrays of the source splits, each loaded once per DoFn instance (memory-mapped when local)."""

    def __init__(self, staging: beam_ingest.Staging):
        self._staging = staging
        self._arrays: dict[tuple[str, str], np.ndarray] = {}

    @staticmethod
    def file(staging: beam_ingest.Staging, source_split: str, name: str) -> str:
        return staging.path(f"{source_split}-{name}.npy")

    def get(self, source_split: str, name: str) -> np.ndarray:
        if (source_split, name) not in self._arrays:
            path = self.file(self._staging, source_split, name)
            if self._staging.local:
                try:
                    # A plain ndarray view of the map: indexing a np.memmap costs ten times more.
                    array = np.asarray(np.load(path, mmap_mode="r"))
                except ValueError:  # Object arrays cannot be memory-mapped; this one we staged ourselves.
                    array = np.load(path, allow_pickle=True)
            else:
                with FileSystems.open(path) as file:
                    array = np.load(io.BytesIO(file.read()), allow_pickle=True)
            self._arrays[(source_split, name)] = array
        return self._arrays[(source_split, name)]


class ChunkProcessor:
    """The per-chunk work of the shared ingest: validate, split and serialise the records of a staged chunk."""

    def __init__(self, plan: SplitPlan, layout: RecordLayout, staging: beam_ingest.Staging):
        self._plan = plan
        self._layout = layout
        self._staging = staging
        self._staged: _StagedArrays | None = None  # Opened in the worker, once per processor.

    def __call__(self, ref: _ChunkRef) -> tuple[list[beam_ingest.Accepted], list[dict[str, Any]]]:
        if self._staged is None:
            self._staged = _StagedArrays(self._staging)
        images = self._staged.get(ref.source_split, "images")
        labels = self._staged.get(ref.source_split, "labels")
        chunk = Chunk(
            source_split=ref.source_split,
            start=ref.start,
            images=images[ref.start : ref.stop],
            labels=labels[ref.start : ref.stop],
            image_origin=ref.image_origin,
            label_origin=ref.label_origin,
            positions=self._staged.get(ref.source_split, "positions")[ref.start : ref.stop]
            if ref.has_positions
            else None,
        )
        by_split, found_rejects = split_chunk(chunk, self._plan, self._layout)
        accepted = [
            (key, split, record)
            for split, indices in by_split.items()
            for key, record in serialize_records(ref.source_split, indices, images, labels)
        ]
        return accepted, found_rejects
