"""The MNIST ingest executor: reads a source, validates, splits and writes it as TFRecord Examples.

The driver reads the source into numpy arrays and stages them as .npy files; an Apache
Beam pipeline then does the per-record work on chunks of a few thousand records (one
Beam element per chunk, not per record, which would be ten times slower on the
DirectRunner):

    chunks ─ validate, split ─┬─ record indices ─ group by (split, shard) ─ serialise, write a shard file ─┐
                              └─ rejects ──────────────────────────────────────────────────────────────────┴─ stats

The elements carry record indices into the staged arrays (memory-mapped by each
worker), never the images: `beam.Create` pickles and bz2-compresses its values into
the pipeline graph, and a group-by-key copies what it moves several times, which
together cost more than the whole ingest of MNIST.
"""

from __future__ import annotations

import importlib.resources
import itertools
import json
import logging
import shutil
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apache_beam as beam
import numpy as np
import tensorflow as tf
from apache_beam.options.pipeline_options import PipelineOptions
from tensorflow_metadata.proto.v0 import schema_pb2

from kflow.components.mnist_ingest.records import (
    TEST_SPLIT,
    Chunk,
    RecordLayout,
    SplitPlan,
    serialize_records,
    split_chunk,
)
from kflow.components.mnist_ingest.sources import Source, SourceSplit, read_source
from kflow.components.util.schema import annotation_tags, find_feature, int_domain, load_schema
from kflow.pipeline.dsl.artifacts import Examples, Rejects, Schema

log = logging.getLogger(__name__)

DEFAULT_SPLIT = {"train": 9, "eval": 1}
CHUNK_SIZE = 4000
"""Records per Beam element: large enough to amortise Beam's per-element cost, small enough to spread the work."""

# The features the ingest writes, and their types, which the schema must declare.
_FEATURES = {"image": schema_pb2.BYTES, "label": schema_pb2.INT, "key": schema_pb2.BYTES}
_REJECTS = "rejects"


def run(
    *,
    examples: Examples,
    schema: Schema,
    rejects: Rejects,
    source_path: str | None = None,
    source_format: str = "auto",
    split: dict[str, int] | None = None,
    shards_per_split: int = 2,
    max_records: int | None = None,
    max_invalid_fraction: float = 0.01,
    beam_args: list[str] | tuple[str, ...] = (),
) -> dict[str, Any]:
    """Ingests MNIST into `examples`, copies its schema into `schema` and lists refused records in `rejects`.

    Returns the key figures: {"read": N, "<split>": n, ..., "rejected": r, "source_format": ...}.
    """
    split = DEFAULT_SPLIT if split is None else split
    plan = SplitPlan.from_parameters(split, shards_per_split)
    _check_limits(max_records, max_invalid_fraction)
    layout = _copy_schema(schema)

    source = read_source(source_path, source_format).limit(max_records)
    read = source.size
    if read == 0:
        raise ValueError(f"the source {source.location} ({source.format}) holds no records")
    log.info("ingest: read %d records from %s (%s)", read, source.location, source.format)

    for artifact in (examples, rejects):
        artifact.path.mkdir(parents=True, exist_ok=True)
    _run_beam_pipeline(source, plan, layout, examples, rejects, list(beam_args))

    stats = examples.stats
    accepted = {name: stats["accepted"][name] for name in [*split, TEST_SPLIT]}  # In the order the user gave.
    rejected = sum(stats["rejected"].values())
    written = " ".join(f"{name}={count}" for name, count in accepted.items())
    log.info("ingest: wrote %s, rejected %d (%d shards per split)", written, rejected, plan.shards)
    if rejected > max_invalid_fraction * read:
        reasons = ", ".join(f"{reason}: {count}" for reason, count in stats["rejected"].items())
        raise ValueError(
            f"ingest: {rejected} of {read} records are invalid ({rejected / read:.2%}), more than "
            f"max_invalid_fraction={max_invalid_fraction:g} allows ({reasons}); see {rejects.file}"
        )
    return {"read": read, **accepted, "rejected": rejected, "source_format": source.format}


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


def _copy_schema(schema: Schema) -> RecordLayout:
    """Copies the MNIST schema into the schema artifact and returns what it says a valid record is."""
    schema.path.mkdir(parents=True, exist_ok=True)
    with importlib.resources.as_file(importlib.resources.files("kflow.schemas") / "mnist" / "schema.pbtxt") as path:
        shutil.copyfile(path, schema.file)
    proto = load_schema(schema.file)
    declared = {feature.name for feature in proto.feature}
    if declared != set(_FEATURES):
        raise ValueError(
            f"{schema.file} declares the features {sorted(declared)}; the ingest writes {sorted(_FEATURES)}"
        )
    for name, kind in _FEATURES.items():
        if find_feature(proto, name).type != kind:
            found = schema_pb2.FeatureType.Name(find_feature(proto, name).type)
            raise ValueError(
                f"{schema.file}: feature {name!r} is {found}; the ingest writes it as "
                f"{schema_pb2.FeatureType.Name(kind)}"
            )
    tags = annotation_tags(proto, "image")
    if "shape" not in tags or "dtype" not in tags:
        raise ValueError(f"{schema.file}: feature 'image' needs the annotation tags shape=... and dtype=...")
    label_min, label_max = int_domain(proto, "label")
    image_shape = tuple(int(size) for size in tags["shape"].split(","))
    return RecordLayout(image_shape, tags["dtype"], label_min, label_max)


def _run_beam_pipeline(
    source: Source, plan: SplitPlan, layout: RecordLayout, examples: Examples, rejects: Rejects, beam_args: list[str]
) -> None:
    unmatched = [entry for source_split in source.splits for entry in source_split.unmatched_rejects()]
    # Every shard file is written, even when no record falls into it: each shard gets a None batch.
    every_shard = [((split, shard), None) for split in plan.splits for shard in range(plan.shards)]

    # The staged arrays live until the pipeline has finished; workers share the local file system.
    with tempfile.TemporaryDirectory(prefix="kflow-mnist-ingest-") as staging:
        chunks = [chunk for source_split in source.splits for chunk in _stage(source_split, Path(staging))]
        with beam.Pipeline(options=PipelineOptions(beam_args)) as pipeline:
            processed = (
                pipeline
                | "Chunks" >> beam.Create(chunks, reshuffle=False)
                | "ValidateAndSplit"
                >> beam.ParDo(_SplitChunk(plan, layout, staging)).with_outputs(_REJECTS, main="records")
            )
            shard_counts = (
                (processed.records, pipeline | "EveryShard" >> beam.Create(every_shard, reshuffle=False))
                | "FlattenRecords" >> beam.Flatten()
                | "GroupByShard" >> beam.GroupByKey()
                | "WriteShards" >> beam.ParDo(_WriteShard(examples, plan.shards, staging))
            )
            found_rejects = (
                processed[_REJECTS],
                pipeline | "Unmatched" >> beam.Create([unmatched], reshuffle=False),
            ) | "FlattenRejects" >> beam.Flatten()
            _ = (
                pipeline
                | "Start" >> beam.Create([None])
                | "WriteStats"
                >> beam.ParDo(
                    _WriteStats(examples, rejects, source.size, plan.splits),
                    beam.pvalue.AsList(shard_counts),
                    beam.pvalue.AsList(found_rejects),
                )
            )


@dataclass(frozen=True)
class _ChunkRef:
    """Records [start, stop) of a staged source split, and where they come from."""

    source_split: str
    start: int
    stop: int
    image_origin: str
    label_origin: str
    has_positions: bool


def _stage(source_split: SourceSplit, folder: Path) -> list[_ChunkRef]:
    """Saves the paired records of a source split as .npy files and returns its chunks."""
    paired = source_split.paired
    arrays = {"images": source_split.images, "labels": source_split.labels, "positions": source_split.positions}
    for name, array in arrays.items():
        if array is not None:
            np.save(
                _StagedArrays.file(folder, source_split.name, name), array[:paired], allow_pickle=array.dtype == object
            )
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
    """The staged arrays of the source splits, each loaded once per DoFn instance, memory-mapped."""

    def __init__(self, folder: str | Path):
        self._folder = Path(folder)
        self._arrays: dict[tuple[str, str], np.ndarray] = {}

    @staticmethod
    def file(folder: str | Path, source_split: str, name: str) -> Path:
        return Path(folder) / f"{source_split}-{name}.npy"

    def get(self, source_split: str, name: str) -> np.ndarray:
        if (source_split, name) not in self._arrays:
            path = self.file(self._folder, source_split, name)
            try:
                # A plain ndarray view of the map: indexing a np.memmap costs ten times more.
                array = np.asarray(np.load(path, mmap_mode="r"))
            except ValueError:  # Object arrays cannot be memory-mapped; this one we staged ourselves.
                array = np.load(path, allow_pickle=True)
            self._arrays[(source_split, name)] = array
        return self._arrays[(source_split, name)]


class _SplitChunk(beam.DoFn):
    """Validates a chunk and splits it: emits ((split, shard), (source split, [record index])) and reject lists."""

    def __init__(self, plan: SplitPlan, layout: RecordLayout, staging: str):
        self._plan = plan
        self._layout = layout
        self._staging = staging

    def setup(self):
        self._staged = _StagedArrays(self._staging)

    def process(self, ref):
        chunk = Chunk(
            source_split=ref.source_split,
            start=ref.start,
            images=self._staged.get(ref.source_split, "images")[ref.start : ref.stop],
            labels=self._staged.get(ref.source_split, "labels")[ref.start : ref.stop],
            image_origin=ref.image_origin,
            label_origin=ref.label_origin,
            positions=self._staged.get(ref.source_split, "positions")[ref.start : ref.stop]
            if ref.has_positions
            else None,
        )
        shards, found_rejects = split_chunk(chunk, self._plan, self._layout)
        for split_shard, indices in shards.items():
            yield split_shard, (ref.source_split, indices)
        if found_rejects:
            yield beam.pvalue.TaggedOutput(_REJECTS, found_rejects)


class _WriteShard(beam.DoFn):
    """Serialises the records of one shard and writes them, sorted by key; emits (split, shard, record count)."""

    def __init__(self, examples: Examples, shards: int, staging: str):
        self._examples = examples
        self._shards = shards
        self._staging = staging

    def setup(self):
        self._staged = _StagedArrays(self._staging)

    def process(self, element):
        (split, shard), batches = element
        records = []
        for source_split, indices in filter(None, batches):  # Without the None batch every shard gets.
            images, labels = self._staged.get(source_split, "images"), self._staged.get(source_split, "labels")
            records.extend(serialize_records(source_split, indices, images, labels))
        records.sort()
        folder = self._examples.split_uri(split)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"data_tfrecord-{shard:05d}-of-{self._shards:05d}.gz"
        with tf.io.TFRecordWriter(str(path), options="GZIP") as writer:
            for _, record in records:
                writer.write(record)
        yield split, shard, len(records)


class _WriteStats(beam.DoFn):
    """Writes stats.json and rejects.jsonl once every shard is written."""

    def __init__(self, examples: Examples, rejects: Rejects, read: int, splits: tuple[str, ...]):
        self._examples = examples
        self._rejects = rejects
        self._read = read
        self._splits = splits

    def process(self, _, shard_counts, reject_lists):
        """`shard_counts`: (split, shard, records written) of every shard; `reject_lists`: lists of rejects."""
        accepted = dict.fromkeys(self._splits, 0)
        for split, _shard, count in shard_counts:
            accepted[split] += count
        entries = sorted(itertools.chain.from_iterable(reject_lists), key=lambda r: (r["record"]["key"], r["position"]))
        rejected = dict(sorted(Counter(entry["reason"] for entry in entries).items()))
        if self._read != sum(accepted.values()) + sum(rejected.values()):
            raise RuntimeError(
                f"ingest: the counts do not add up: read {self._read}, accepted {accepted}, rejected {rejected}"
            )
        self._rejects.file.write_text("".join(json.dumps(entry, sort_keys=True) + "\n" for entry in entries))
        self._examples.write_json("stats.json", {"read": self._read, "accepted": accepted, "rejected": rejected})
