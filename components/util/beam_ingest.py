"""The Beam half of an ingest: process chunks, split, write shards, account for every record.

An ingest's driver cuts its source into chunks (small, picklable references: a file and
a byte range, or a staged file) and gives `run_ingest_pipeline` a `process_chunk`
function that turns one chunk into accepted records `(key, group, serialized Example)`
and reject entries. The pipeline, one Beam element per chunk:

    chunks ─ process (parse, validate, filter, serialise; stage the chunk's records) ─┬─ rejects ───────────┐
             ├─ [plan] histogram of key hashes per group ─ cut ranks ─ keys at the cuts ─ split cuts ─┐     │
             └─ staged chunk ─ route: a part file per (split, shard), sorted by key ◄─────────────────┘     │
                ─ group part names by shard ─ merge the parts into a gzipped TFRecord shard ─ counts ─ stats ┘
             └─ bytes per group ─ shards per split (with `shards=0`: one per SHARD_BYTES of the split) ─ route, write

Records travel between stages through staged files in a `Staging` folder: under the
pipeline's --temp_location when it has one (any Beam filesystem: gs://, s3://, hdfs://, so
a distributed runner's workers share it), else a local temporary folder. Only file names,
counts and fixed-size histograms go through Beam, so memory does not grow with the data:
a worker holds one chunk, or one record of each part it merges.

Without `plan`, a record's group is its split (WikiText-2: the source's split); with a
`plan` (stratified by label), each group's records are ordered by a hash of their key and
cut by quota: the cuts are found from a histogram of the hashes (the top 16 bits) and the
few keys in the buckets where a cut falls. The shard of a record is a stable hash of its key.

Defaults that follow the data: `shards=0` gives each split one shard per SHARD_BYTES of its serialised
Examples (at least one, and one per ingest worker when the split is over PARALLEL_SHARD_BYTES); and a
DirectRunner ingest of PARALLEL_RECORDS records or more whose Beam options choose no running mode processes
its chunks in one worker process per core (`multi_processing`): the workers' start-up (~10 s each here:
they import TensorFlow) pays for itself from about there (bench/ingest_scale.py).
"""

from __future__ import annotations

import bisect
import hashlib
import heapq
import json
import logging
import math
import os
import re
import shutil
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import apache_beam as beam
import numpy as np
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import GoogleCloudOptions, PipelineOptions

from kflow.components.util.compressed import open_source
from kflow.components.util.progress import RecordProgress
from kflow.components.util.staged_records import read_rows, write_rows
from kflow.pipeline.dsl.artifacts import Examples, Rejects
from kflow.pipeline.dsl.config import named_runner
from kflow.pipeline.dsl.scratch import scratch_dir

log = logging.getLogger(__name__)

INVALID = "invalid"
FILTERED = "filtered"
_REJECTS = "rejects"
_HISTOGRAM = "histogram"
_SIZES = "sizes"
SHARD_BYTES = 256 * 2**20  # Serialised Examples per shard when the count is automatic: gzipped files of ~100 MB.
# A split of more than this gets at least a shard per ingest worker, so that the workers write them in parallel.
PARALLEL_SHARD_BYTES = 16 * 2**20
PARALLEL_RECORDS = 500_000
_FIBONACCI, _UINT64 = 0x9E3779B97F4A7C15, (1 << 64) - 1
STREAM_BATCH = 32  # Records a batch in staged files: a merge holds a batch of each of its files (one per chunk).
_BUCKET_BITS = 16
_POSITION = re.compile(r"(.*)[:#](\d+)")
_JSON = json.JSONEncoder(sort_keys=True)  # One encoder for every reject line (json.dumps builds one per call).

# (key, group, tf.train.Example serialised with deterministic=True: the order of its feature map otherwise
# differs between processes, and the same data must give the same bytes on any runner)
Accepted = tuple[str, str, bytes]
ProcessChunk = Callable[[Any], tuple[list[Accepted], list[dict[str, Any]]]]
SortKey = tuple[int, str]


def stable_hash(text: str) -> int:
    """A 64-bit hash of `text` that is the same on every machine and in every process."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def make_reject(reason: str, kind: str, position: str, record: Any, **details: Any) -> dict[str, Any]:
    """One line of rejects.jsonl: the raw record, why it was refused, invalid or filtered, and where it was."""
    if kind not in (INVALID, FILTERED):
        raise ValueError(f"reject kind must be {INVALID!r} or {FILTERED!r}, got {kind!r}")
    return {"reason": reason, "kind": kind, "position": position, "record": record, **details}


def raw_text(data: bytes) -> str:
    """Raw bytes as JSON-safe text: undecodable bytes become backslash escapes."""
    return data.decode("utf-8", errors="backslashreplace")


def check_fraction(name: str, value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise ValueError(f"{name} must be a number from 0 to 1, got {value!r}")


def check_invalid_fraction(stats: dict[str, Any], max_invalid_fraction: float, rejects: Rejects) -> None:
    """Fails when the share of INVALID records (not the policy-filtered ones) exceeds the limit."""
    invalid = sum(stats["invalid"].values())
    read = stats["read"]
    if read and invalid > max_invalid_fraction * read:
        reasons = ", ".join(f"{reason}: {count}" for reason, count in stats["invalid"].items())
        raise ValueError(
            f"ingest: {invalid} of {read} records are invalid ({invalid / read:.2%}), more than "
            f"max_invalid_fraction={max_invalid_fraction:g} allows ({reasons}); see {rejects.file}"
        )


def ingest_summary(stats: dict[str, Any], max_invalid_fraction: float, rejects: Rejects) -> dict[str, Any]:
    """An ingest executor's result, {"read", <split>: accepted, "rejected", "invalid", "filtered"}, after
    `check_invalid_fraction`."""
    check_invalid_fraction(stats, max_invalid_fraction, rejects)
    return {
        "read": stats["read"],
        **stats["accepted"],
        **{kind: sum(stats[kind].values()) for kind in ("rejected", "invalid", "filtered")},
    }


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

    def plain_copy(self, source: str, name: str) -> str:
        """Decompresses the gzipped file `source` into the staging folder as `name`, streaming; returns the copy's
        path. Its records can then be cut into chunks by offset, which a gzip stream does not allow."""
        copy = self.path(name)
        log.info("ingest: decompressing %s into the staging folder", source)
        with open_source(source) as stream, FileSystems.create(copy) as target:
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


def _write_staged(path: str, rows: Sequence[tuple], kinds: tuple[str, ...]) -> None:
    """Batches of STREAM_BATCH rows, so that `_read_staged` holds one batch at a time: a merge holds a batch of
    each of its files."""
    with FileSystems.create(path) as file:
        write_rows(file, rows, kinds, STREAM_BATCH)


def _read_staged(path: str, kinds: tuple[str, ...]) -> Iterator[tuple]:
    with FileSystems.open(path) as file:
        yield from read_rows(file, kinds)


def _read_chunk(path: str) -> Iterator[tuple[SortKey, str, bytes]]:
    for hashed, key, group, record in _read_staged(path, CHUNK_ROWS):
        yield (hashed, key), group, record


def run_ingest_pipeline(
    *,
    chunks: Sequence[Any],
    process_chunk: ProcessChunk,
    splits: Sequence[str],
    shards: int,
    read: int,
    examples: Examples,
    rejects: Rejects,
    beam_args: Sequence[str] = (),
    plan: StratifiedPlan | None = None,
    extra_rejects: Sequence[dict[str, Any]] = (),
    staging: Staging | None = None,
) -> dict[str, Any]:
    """Runs the ingest pipeline and returns stats.json: read, accepted per split, rejected per reason.

    `extra_rejects` are rejects the driver found (e.g. CSV rows it could not cut out of the file).
    `staging`: the driver's own, when its chunks refer to files it staged; else one for this run.
    """
    if isinstance(shards, bool) or not isinstance(shards, int) or shards < 0:
        raise ValueError(f"shards_per_split must be a positive integer or 0 (automatic), got {shards!r}")
    if staging is None:
        with Staging(beam_args) as own:
            return run_ingest_pipeline(
                chunks=chunks, process_chunk=process_chunk, splits=splits, shards=shards, read=read,
                examples=examples, rejects=rejects, beam_args=beam_args, plan=plan,
                extra_rejects=extra_rejects, staging=own,
            )  # fmt: skip
    for artifact in (examples, rejects):
        artifact.path.mkdir(parents=True, exist_ok=True)
    beam_args = data_beam_args(beam_args, read)
    with beam.Pipeline(options=PipelineOptions(named_runner(beam_args))) as pipeline:
        processed = (
            pipeline
            | "Chunks" >> beam.Create(list(enumerate(chunks)))
            | "Process"
            >> beam.ParDo(
                _Process(process_chunk, staging, read, _in_process(beam_args), plan is not None)
            ).with_outputs(_REJECTS, _HISTOGRAM, _SIZES, main="staged")
        )
        counts = beam.pvalue.AsSingleton(
            processed[_SIZES]
            | "Sizes" >> beam.CombineGlobally(_add_sizes)
            | "ShardCounts" >> beam.Map(shard_counts, shards, tuple(splits), plan, _direct_workers(beam_args))
        )
        cuts = None
        if plan is not None:
            histogram = processed[_HISTOGRAM] | "Histogram" >> beam.CombineGlobally(_MergeHistograms())
            wanted = histogram | "CutRanks" >> beam.Map(plan.cut_ranks)
            keys_at_cuts = (
                processed.staged
                | "KeysAtCuts" >> beam.FlatMap(_keys_at_cuts, beam.pvalue.AsSingleton(wanted))
                | "AllKeysAtCuts" >> beam.combiners.ToList()
            )
            cuts = beam.pvalue.AsSingleton(
                wanted | "Cuts" >> beam.Map(_split_cuts, beam.pvalue.AsSingleton(keys_at_cuts))
            )
        parts = processed.staged | "Route" >> beam.ParDo(_Route(tuple(splits), staging), counts, cuts)
        every_shard = pipeline | "Shards" >> beam.Create([None]) | "EveryShard" >> beam.FlatMap(_every_shard, counts)
        written = (
            (parts, every_shard)
            | "FlattenParts" >> beam.Flatten()
            | "GroupByShard" >> beam.GroupByKey()
            | "WriteShards" >> beam.ParDo(_WriteShard(examples), counts)
        )
        driver_rejects = [_stage_rejects(list(extra_rejects), staging, "driver")] if extra_rejects else []
        found_rejects = (
            processed[_REJECTS],
            pipeline | "DriverRejects" >> beam.Create(driver_rejects, reshuffle=False),
        ) | "FlattenRejects" >> beam.Flatten()
        _ = (
            pipeline
            | "Start" >> beam.Create([None])
            | "WriteStats"
            >> beam.ParDo(
                _WriteStats(examples, rejects, read, tuple(splits)),
                beam.pvalue.AsList(written),
                beam.pvalue.AsList(found_rejects),
            )
        )
    return examples.stats


def data_beam_args(beam_args: Sequence[str], records: int) -> list[str]:
    """The ingest's Beam options: the given ones, plus one worker process per core for a large input on the
    DirectRunner when they choose no running mode or worker count."""
    runner = PipelineOptions(list(beam_args)).get_all_options().get("runner")
    chosen = any(arg.startswith(("--direct_running_mode", "--direct_num_workers")) for arg in beam_args)
    if records < PARALLEL_RECORDS or runner not in (None, "DirectRunner") or chosen:
        return list(beam_args)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    if cores < 2:
        return list(beam_args)
    return [*beam_args, "--direct_running_mode=multi_processing", f"--direct_num_workers={cores}"]


def shard_counts(
    sizes: dict[str, int], shards: int, splits: Sequence[str], plan: StratifiedPlan | None, workers: int = 1
) -> dict:
    """{split: shard count}: `shards` each, or with `shards=0` one per SHARD_BYTES of the split's Examples, and at
    least one per worker (up to one per PARALLEL_SHARD_BYTES) so that a big split is written in parallel.

    `sizes` are the serialised bytes per group: a split's own without a plan, else the total shared by quota."""
    if shards:
        return dict.fromkeys(splits, shards)
    total = sum(sizes.values())
    if plan is None:
        split_bytes = {split: sizes.get(split, 0) for split in splits}
    else:
        weight = sum(plan.weights.values())
        split_bytes = {split: total * plan.weights.get(split, 0) / weight for split in splits}
    return {
        split: max(1, math.ceil(size / SHARD_BYTES), min(workers, math.ceil(size / PARALLEL_SHARD_BYTES)))
        for split, size in split_bytes.items()
    }


def _every_shard(_, counts: dict[str, int]) -> Iterator[tuple[tuple[str, int], None]]:
    """Every (split, shard) gets a file, records or not."""
    for split, count in counts.items():
        for shard in range(count):
            yield (split, shard), None


def _add_sizes(sizes: Iterator[dict[str, int]]) -> dict[str, int]:
    total: Counter = Counter()
    for size in sizes:
        total.update(size)
    return dict(total)


def _direct_workers(beam_args: Sequence[str]) -> int:
    """The DirectRunner's worker count (1 in memory; other runners scale on their own: 1)."""
    options = PipelineOptions(list(beam_args)).get_all_options()
    parallel = options.get("direct_running_mode") in ("multi_processing", "multi_threading")
    if not parallel or options.get("runner") not in (None, "DirectRunner"):
        return 1
    return int(options.get("direct_num_workers") or 1)


def _in_process(beam_args: Sequence[str]) -> bool:
    """Whether the chunks are processed in this process (so one progress bar can show them all)."""
    options = PipelineOptions(list(beam_args)).get_all_options()
    return options.get("runner") in (None, "DirectRunner") and options.get("direct_running_mode") != "multi_processing"


def shard_of(hashed: int, count: int) -> int:
    """The shard of a record whose key hashes to `hashed`, among `count`.

    The hash is mixed first (Fibonacci hashing): splits are made from the same hash, by its value modulo
    the buckets (MNIST, Quora, WikiText-2) or by ranges of it (stratified), and a shard taken as the plain
    hash modulo the count would follow the split (a split of the even buckets would fill only even shards).
    """
    return (((hashed * _FIBONACCI) & _UINT64) >> 32) % count


def _sort_key(key: str) -> SortKey:
    """A record's place in its group: a hash of the key's part before its first "|", then the key (ties)."""
    return stable_hash(key.partition("|")[0]), key


class _Process(beam.DoFn):
    """Runs `process_chunk` on a chunk and stages its accepted records sorted by `_sort_key`; emits the staged
    file's name, the rejects, and (with a plan) a histogram of the records' hashes per group.

    Shows the records processed out of `read`: as a bar when every chunk is processed here, else
    as a log line at each tenth from each worker."""

    def __init__(self, process_chunk: ProcessChunk, staging: Staging, read: int, one_bar: bool, histogram: bool):
        self._process_chunk = process_chunk
        self._staging = staging
        self._read, self._one_bar = read, one_bar
        self._histogram = histogram
        self._progress: RecordProgress | None = None

    def setup(self):
        self._progress = RecordProgress("ingest", self._read, allow_bar=self._one_bar)

    def teardown(self):
        if self._progress is not None:
            self._progress.close()

    def process(self, element):
        index, chunk = element
        accepted, found_rejects = self._process_chunk(chunk)
        if self._progress is not None:
            self._progress.add(len(accepted) + len(found_rejects))
        if accepted:
            staged = sorted((_sort_key(key), group, record) for key, group, record in accepted)
            path = self._staging.path(f"chunk-{index:08d}.rec")
            _write_staged(path, [(*sort_key, group, record) for sort_key, group, record in staged], CHUNK_ROWS)
            yield path
            sizes: Counter = Counter()
            for _, group, record in staged:
                sizes[group] += len(record)
            yield beam.pvalue.TaggedOutput(_SIZES, dict(sizes))
            if self._histogram:
                by_group: dict[str, list[int]] = {}
                for (hashed, _), group, _ in staged:
                    by_group.setdefault(group, []).append(hashed >> (64 - _BUCKET_BITS))
                yield beam.pvalue.TaggedOutput(
                    _HISTOGRAM, {group: np.unique(buckets, return_counts=True) for group, buckets in by_group.items()}
                )
        if found_rejects:
            yield beam.pvalue.TaggedOutput(_REJECTS, _stage_rejects(found_rejects, self._staging, f"{index:08d}"))


class _MergeHistograms(beam.CombineFn):
    """{group: records per hash bucket}: a fixed size however many records. A chunk's histogram comes sparse,
    (buckets, counts), as its records fill few of the 65,536 buckets."""

    def create_accumulator(self):
        return {}

    def add_input(self, accumulator, histogram):
        for group, (buckets, counts) in histogram.items():
            np.add.at(accumulator.setdefault(group, np.zeros(1 << _BUCKET_BITS, np.int64)), buckets, counts)
        return accumulator

    def merge_accumulators(self, accumulators):
        merged = {}
        for accumulator in accumulators:
            for group, counts in accumulator.items():
                if group in merged:
                    merged[group] += counts
                else:
                    merged[group] = counts.copy()
        return merged

    def extract_output(self, accumulator):
        return accumulator


def _keys_at_cuts(path: str, wanted: dict[str, list[tuple[int, str, int, int]]]):
    """(group, bucket, sort key) of the staged records in a bucket where a cut falls."""
    buckets = {(group, bucket) for group, cuts in wanted.items() for _, _, bucket, _ in cuts}
    for sort_key, group, _ in _read_chunk(path):
        bucket = sort_key[0] >> (64 - _BUCKET_BITS)
        if (group, bucket) in buckets:
            yield group, bucket, sort_key


def _split_cuts(wanted: dict[str, list[tuple[int, str, int, int]]], keys_at_cuts: list) -> SplitCuts:
    in_bucket: dict[tuple[str, int], list[SortKey]] = {}
    for group, bucket, sort_key in keys_at_cuts:
        in_bucket.setdefault((group, bucket), []).append(sort_key)
    for keys in in_bucket.values():
        keys.sort()
    return SplitCuts(
        {
            group: tuple((in_bucket[(group, bucket)][offset], split) for _, split, bucket, offset in cuts)
            for group, cuts in wanted.items()
        }
    )


def _stage_rejects(entries: list[dict[str, Any]], staging: Staging, name: str) -> tuple[str, Counter]:
    """Saves reject entries as (source order, JSON line) in a staged file; returns it and the counts by (kind, reason).

    Only the file name and the counts travel through Beam: side inputs of many small dicts
    cost more (Beam measures their deep size) than writing them.
    """
    path = staging.path(f"rejects-{name}.rec")
    _write_staged(path, sorted((*_position_order(entry), _JSON.encode(entry)) for entry in entries), REJECT_ROWS)
    return path, Counter((entry["kind"], entry["reason"]) for entry in entries)


class _Route(beam.DoFn):
    """Splits and shards the records of a staged chunk into part files sorted by key; emits ((split, shard), part).

    A record's shard comes from its sort key's hash (`shard_of`)."""

    def __init__(self, splits: tuple[str, ...], staging: Staging):
        self._splits = splits
        self._staging = staging

    def process(self, path, counts, cuts=None):
        parts: dict[tuple[str, int], list[tuple[str, bytes]]] = {}
        for sort_key, group, record in _read_chunk(path):
            key = sort_key[1]
            split = group if cuts is None else cuts.split(sort_key, group)
            if split not in self._splits:
                raise RuntimeError(f"ingest: record {key!r} was routed to the unknown split {split!r}")
            parts.setdefault((split, shard_of(sort_key[0], counts[split])), []).append((key, record))
        chunk = path.rsplit("/", 1)[-1].removesuffix(".rec")
        for (split, shard), records in parts.items():
            part = self._staging.path(f"part-{split}-{shard:05d}-{chunk}.rec")
            _write_staged(part, sorted(records), PART_ROWS)
            yield (split, shard), part


class _WriteShard(beam.DoFn):
    """Merges the part files of one shard into a TFRecord file sorted by key; emits (split, shard, record count)."""

    def __init__(self, examples: Examples):
        self._examples = examples

    def process(self, element, counts):
        import tensorflow as tf  # Only the workers that write need TensorFlow.

        (split, shard), parts = element
        folder = self._examples.split_uri(split)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"data_tfrecord-{shard:05d}-of-{counts[split]:05d}.gz"
        count = 0
        with tf.io.TFRecordWriter(str(path), options="GZIP") as writer:
            merged = heapq.merge(*(_read_staged(part, PART_ROWS) for part in sorted(filter(None, parts))))
            for _, record in merged:
                writer.write(record)
                count += 1
        yield split, shard, count


def _position_order(entry: dict[str, Any]) -> tuple:
    """Rejects in source order: by file, then numerically by line (`file:line`) or index (`array#index`)."""
    match = _POSITION.fullmatch(str(entry["position"]))
    return (match[1], int(match[2])) if match else (str(entry["position"]), -1)


class _WriteStats(beam.DoFn):
    """Writes stats.json and rejects.jsonl once every shard is written, and checks that the counts add up."""

    def __init__(self, examples: Examples, rejects: Rejects, read: int, splits: tuple[str, ...]):
        self._examples = examples
        self._rejects = rejects
        self._read = read
        self._splits = splits

    def process(self, _, shard_counts, staged_rejects):
        accepted = dict.fromkeys(self._splits, 0)
        for split, _shard, count in shard_counts:
            accepted[split] += count
        by_kind = {kind: Counter() for kind in (INVALID, FILTERED)}
        for _path, counts in staged_rejects:
            for (kind, reason), count in counts.items():
                by_kind[kind][reason] += count
        # Each staged file is sorted: merged in source order with one line of each in memory.
        lines = heapq.merge(*(_read_staged(path, REJECT_ROWS) for path, _ in staged_rejects))
        rejected = dict(sorted((by_kind[INVALID] + by_kind[FILTERED]).items()))
        if self._read != sum(accepted.values()) + sum(rejected.values()):
            raise RuntimeError(
                f"ingest: the counts do not add up: read {self._read}, accepted {accepted}, rejected {rejected}"
            )
        with self._rejects.file.open("w") as file:
            file.writelines(line + "\n" for _, _, line in lines)
        self._examples.write_json(
            "stats.json",
            {
                "read": self._read,
                "accepted": accepted,
                "rejected": rejected,
                "invalid": dict(sorted(by_kind[INVALID].items())),
                "filtered": dict(sorted(by_kind[FILTERED].items())),
            },
        )


def copy_schema(dataset: str, schema_artifact: Any, features: dict[str, int]) -> Any:
    """Copies schemas/<dataset>/schema.pbtxt into the Schema artifact; checks it declares `features` with their types.

    Returns the parsed schema; `features` maps a name to its `schema_pb2` type (BYTES, INT).
    """
    import importlib.resources
    import shutil

    from tensorflow_metadata.proto.v0 import schema_pb2

    from kflow.components.util.schema import load_schema

    schema_artifact.path.mkdir(parents=True, exist_ok=True)
    with importlib.resources.as_file(importlib.resources.files("kflow.schemas") / dataset / "schema.pbtxt") as path:
        shutil.copyfile(path, schema_artifact.file)
    proto = load_schema(schema_artifact.file)
    declared = {feature.name: feature.type for feature in proto.feature}
    if set(declared) != set(features):
        raise ValueError(
            f"{schema_artifact.file} declares the features {sorted(declared)}; the ingest writes {sorted(features)}"
        )
    for name, kind in features.items():
        if declared[name] != kind:
            raise ValueError(
                f"{schema_artifact.file}: feature {name!r} is {schema_pb2.FeatureType.Name(declared[name])}; "
                f"the ingest writes it as {schema_pb2.FeatureType.Name(kind)}"
            )
    return proto


def text_min_chars(proto: Any, name: str) -> int:
    """The `min_chars=n` annotation tag of a text feature (0 when absent)."""
    from kflow.components.util.schema import annotation_tags

    return int(annotation_tags(proto, name).get("min_chars", 0))


def check_split_shares(split: dict[str, int], required: tuple[str, ...], why: str = "") -> None:
    """Refuses a `data.split` without the `required` splits or with shares that are not positive integers."""
    missing = [name for name in required if name not in split]
    if missing:
        because = f"{why}, so data.split" if why else "it"
        names = " and ".join([", ".join(required[:-1]), required[-1]] if len(required) > 1 else required)
        raise ValueError(
            f"data.split: {because} must give shares to {names} "
            f"(e.g. {{train: 8, eval: 1, test: 1}}); missing {missing}"
        )
    bad = {name: weight for name, weight in split.items() if isinstance(weight, bool) or not isinstance(weight, int)}
    if bad or any(weight < 1 for weight in split.values()):
        raise ValueError(f"data.split: every share must be a positive integer, got {split}")


@dataclass(frozen=True)
class StratifiedPlan:
    """Assigns each record to a split: per group (label), by quota over the records ordered by a hash of their key.

    Within a group of n records ordered by `_sort_key`, the first round(n·w₁/W) go to the first split (names
    sorted), and so on: each split's group ratio matches the whole to a record, and a record's split depends
    on neither the file order nor the other groups. A key's part before its first "|" is hashed; the rest
    breaks ties (e.g. the position that makes a repeated record's key unique), so equal records stay together.
    """

    weights: dict[str, int]

    def ranks(self, count: int) -> list[tuple[int, str]]:
        """(rank of a split's first record, split) for the splits that get records, of a group of `count`."""
        names, total = sorted(self.weights), sum(self.weights.values())
        starts, start, cumulative = [], 0, 0
        for name in names:
            cumulative += self.weights[name]
            stop = round(count * cumulative / total)
            if stop > start:
                starts.append((start, name))
            start = stop
        return starts

    def cut_ranks(self, histogram: dict[str, np.ndarray]) -> dict[str, list[tuple[int, str, int, int]]]:
        """{group: [(rank, split, hash bucket holding that rank, rank within the bucket), ...]}."""
        wanted = {}
        for group, counts in histogram.items():
            below = np.cumsum(counts) - counts  # Records in the buckets before each bucket.
            cuts = []
            for rank, split in self.ranks(int(counts.sum())):
                bucket = int(np.searchsorted(below, rank, side="right")) - 1
                cuts.append((rank, split, bucket, rank - int(below[bucket])))
            wanted[group] = cuts
        return wanted

    def __call__(self, items: list[tuple[str, str]]) -> SplitCuts:
        """The cuts for (key, group) items held in memory (what the pipeline finds without holding them)."""
        by_group: dict[str, list[SortKey]] = {}
        for key, group in items:
            by_group.setdefault(group, []).append(_sort_key(key))
        cuts = {}
        for group, keys in by_group.items():
            keys.sort()
            cuts[group] = tuple((keys[rank], split) for rank, split in self.ranks(len(keys)))
        return SplitCuts(cuts)


@dataclass(frozen=True)
class SplitCuts:
    """{group: ((sort key of a split's first record, split), ...)} in sort order."""

    cuts: dict[str, tuple[tuple[SortKey, str], ...]]

    def split(self, sort_key: SortKey, group: str) -> str:
        starts = self.cuts[group]
        return starts[bisect.bisect_right([first for first, _ in starts], sort_key) - 1][1]

    def __call__(self, key: str, group: str) -> str:
        return self.split(_sort_key(key), group)
