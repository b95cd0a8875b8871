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

Around it: the staged files and their folder (ingest_staging.py), where a record goes (split_plan.py: sort key,
split cuts, shard, shard counts), the Beam options (ingest_options.py), what the executors share
(ingest_records.py: rejects, the invalid-fraction check, split shares, shipped schemas).

Records travel between stages through staged files in a `Staging` folder: under the
pipeline's --temp_location when it has one (any Beam filesystem: gs://, s3://, hdfs://, so
a distributed runner's workers share it), else a local temporary folder. Only file names,
counts and fixed-size histograms go through Beam, so memory does not grow with the data:
a worker holds one chunk, or one staged batch of each part it merges (sorted_runs.py).

Without `plan`, a record's group is its split (WikiText-2: the source's split); with a
`plan` (stratified by label), each group's records are ordered by a hash of their key and
cut by quota: the cuts are found from a histogram of the hashes (the top 16 bits) and the
few keys in the buckets where a cut falls. The shard of a record is a stable hash of its key.

Defaults that follow the data: `shards=0` gives each split one shard per SHARD_BYTES of its serialised
Examples (at least one, and one per ingest worker when the split is over PARALLEL_SHARD_BYTES); and a
DirectRunner ingest of PARALLEL_RECORDS records or more whose Beam options choose no running mode processes
its chunks in one worker process per core (`multi_processing`): the workers' start-up pays for itself from
about there (bench/ingest_scale.py). The workers never import TensorFlow: Examples are built with
example_proto.py and shards written with tfrecord_file.py.
"""

from __future__ import annotations

import heapq
import json
import logging
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from operator import itemgetter
from typing import Any

import apache_beam as beam
import numpy as np
from apache_beam.options.pipeline_options import PipelineOptions

from kflow.components.ingest.ingest_options import data_beam_args, direct_workers, in_process
from kflow.components.ingest.ingest_records import FILTERED, INVALID, ProcessChunk
from kflow.components.ingest.ingest_staging import (
    CHUNK_ROWS,
    PART_ROWS,
    REJECT_ROWS,
    Staging,
    read_chunk,
    read_chunk_keys,
    read_staged,
    read_staged_batches,
    write_staged,
)
from kflow.components.ingest.sorted_runs import merge_batches
from kflow.components.ingest.split_plan import (
    BUCKET_BITS,
    StratifiedPlan,
    shard_counts,
    shard_of,
    sort_key_of,
    split_cuts,
)
from kflow.components.ingest.tfrecord_file import TFRecordWriter
from kflow.components.util.collection_pause import collection_paused
from kflow.components.util.progress import RecordProgress
from kflow.pipeline.dsl.artifacts import Examples, Rejects
from kflow.pipeline.dsl.beam_options import named_runner
from kflow.pipeline.dsl.beam_pipeline import beam_pipeline
from kflow.pipeline.dsl.config_model.data import MAX_SHARDS

log = logging.getLogger(__name__)

_REJECTS = "rejects"
_HISTOGRAM = "histogram"
_SIZES = "sizes"
_POSITION = re.compile(r"(.*)[:#](\d+)")
_BY_KEY = itemgetter(1, 3)  # (key, record): the order the shards are merged in, ties (if keys repeat) too.
_JSON = json.JSONEncoder(sort_keys=True)  # One encoder for every reject line (json.dumps builds one per call).


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
    if isinstance(shards, bool) or not isinstance(shards, int) or not 0 <= shards <= MAX_SHARDS:
        raise ValueError(f"shards_per_split must be 1 to {MAX_SHARDS} or 0 (automatic), got {shards!r}")
    shards = min(shards, max(1, read))  # more would be empty files
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
    one_process = in_process(beam_args)
    with beam_pipeline(PipelineOptions(named_runner(beam_args))) as pipeline:
        processed = (
            pipeline
            | "Chunks" >> beam.Create(list(enumerate(chunks)))
            | "Process"
            >> beam.ParDo(_Process(process_chunk, staging, read, one_process, plan is not None)).with_outputs(
                _REJECTS, _HISTOGRAM, _SIZES, main="staged"
            )
        )
        counts = beam.pvalue.AsSingleton(
            processed[_SIZES]
            | "Sizes" >> beam.CombineGlobally(_add_sizes)
            | "ShardCounts" >> beam.Map(shard_counts, shards, tuple(splits), plan, direct_workers(beam_args))
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
                wanted | "Cuts" >> beam.Map(split_cuts, beam.pvalue.AsSingleton(keys_at_cuts))
            )
        parts = processed.staged | "Route" >> beam.ParDo(_Route(tuple(splits), staging), counts, cuts)
        every_shard = pipeline | "Shards" >> beam.Create([None]) | "EveryShard" >> beam.FlatMap(_every_shard, counts)
        written = (
            (parts, every_shard)
            | "FlattenParts" >> beam.Flatten()
            | "GroupByShard" >> beam.GroupByKey()
            | "WriteShards" >> beam.ParDo(_WriteShard(examples, one_process), counts)
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


class _Process(beam.DoFn):
    """Runs `process_chunk` on a chunk and stages its accepted records sorted by key; emits the staged
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

    @collection_paused
    def process(self, element):
        index, chunk = element
        accepted, found_rejects = self._process_chunk(chunk)
        if self._progress is not None:
            self._progress.add(len(accepted) + len(found_rejects))
        if accepted:
            # CHUNK_ROWS, sorted by key and record, so that each part file routed from it is sorted too: (hash, key)
            # as `sort_key_of` makes them, the group, the record.
            staged = sorted(((*sort_key_of(key), group, record) for key, group, record in accepted), key=_BY_KEY)
            path = self._staging.path(f"chunk-{index:08d}.rec")
            write_staged(path, staged, CHUNK_ROWS, merged=False)
            yield path
            sizes: Counter = Counter()
            for _, _, group, record in staged:
                sizes[group] += len(record)
            yield beam.pvalue.TaggedOutput(_SIZES, dict(sizes))
            if self._histogram:
                by_group: dict[str, list[int]] = {}
                for hashed, _, group, _ in staged:
                    by_group.setdefault(group, []).append(hashed >> (64 - BUCKET_BITS))
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
            np.add.at(accumulator.setdefault(group, np.zeros(1 << BUCKET_BITS, np.int64)), buckets, counts)
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
    buckets = {(group, bucket) for group, cuts in wanted.items() for _, _, bucket, _ in cuts if bucket >= 0}
    cut_buckets = np.array(sorted({bucket for _, bucket in buckets}), np.uint64)
    for hashes, keys, groups in read_chunk_keys(path):
        in_cut_bucket = np.isin(hashes >> np.uint64(64 - BUCKET_BITS), cut_buckets)
        for row in np.flatnonzero(in_cut_bucket).tolist():
            bucket = int(hashes[row]) >> (64 - BUCKET_BITS)
            if (groups[row], bucket) in buckets:
                yield groups[row], bucket, (int(hashes[row]), keys[row])


def _stage_rejects(entries: list[dict[str, Any]], staging: Staging, name: str) -> tuple[str, Counter]:
    """Saves reject entries as (source order, JSON line) in a staged file; returns it and the counts by (kind, reason).

    Only the file name and the counts travel through Beam: side inputs of many small dicts
    cost more (Beam measures their deep size) than writing them.
    """
    path = staging.path(f"rejects-{name}.rec")
    write_staged(path, sorted((*_position_order(entry), _JSON.encode(entry)) for entry in entries), REJECT_ROWS)
    return path, Counter((entry["kind"], entry["reason"]) for entry in entries)


class _Route(beam.DoFn):
    """Splits and shards the records of a staged chunk into part files sorted by key (as the chunk is); emits
    ((split, shard), part).

    A record's shard comes from its sort key's hash (`shard_of`)."""

    def __init__(self, splits: tuple[str, ...], staging: Staging):
        self._splits = splits
        self._staging = staging

    @collection_paused
    def process(self, path, counts, cuts=None):
        parts: dict[tuple[str, int], list[tuple[str, bytes]]] = {}
        for sort_key, group, record in read_chunk(path):
            key = sort_key[1]
            split = group if cuts is None else cuts.split(sort_key, group)
            if split not in self._splits:
                raise RuntimeError(f"ingest: record {key!r} was routed to the unknown split {split!r}")
            parts.setdefault((split, shard_of(sort_key[0], counts[split])), []).append((key, record))
        chunk = path.rsplit("/", 1)[-1].removesuffix(".rec")
        for (split, shard), records in parts.items():
            part = self._staging.path(f"part-{split}-{shard:05d}-{chunk}.rec")
            write_staged(part, records, PART_ROWS)
            yield (split, shard), part


class _WriteShard(beam.DoFn):
    """Merges the part files of one shard into a TFRecord file sorted by key; emits (split, shard, record count).

    Gzipped on two threads beside the merge when the ingest runs in this process (a core is free); on one where
    the workers are processes of their own (the cores are theirs)."""

    def __init__(self, examples: Examples, in_process: bool):
        self._examples = examples
        self._gzip_threads = 2 if in_process else 1

    @collection_paused
    def process(self, element, counts):
        (split, shard), parts = element
        folder = self._examples.split_uri(split)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"data_tfrecord-{shard:05d}-of-{counts[split]:05d}.gz"
        count = 0
        with TFRecordWriter(path, gzip_threads=self._gzip_threads) as writer:
            runs = (read_staged_batches(part, PART_ROWS) for part in sorted(filter(None, parts)))
            for rows in merge_batches(runs):
                writer.write_many([record for _, record in rows])
                count += len(rows)
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
        lines = heapq.merge(*(read_staged(path, REJECT_ROWS) for path, _ in staged_rejects))
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
