"""The Beam half of a text ingest: process chunks, split, write shards, account for every record.

An ingest's driver cuts its source into chunks (small, picklable references: a file and
a byte range, or a staged file) and gives `run_ingest_pipeline` a `process_chunk`
function that turns one chunk into accepted records `(key, group, serialized Example)`
and reject entries. The pipeline, one Beam element per chunk:

    chunks ─ process (parse, validate, filter, serialise; stage accepted records in a file) ─┬─ rejects ─┐
             └─ (staged file, [(key, group)]) ─ route to (split, shard) [─ global split plan] ─ group by
                shard ─ write a sorted, gzipped TFRecord shard ─────────────────────────────────────────┴─ stats

Only keys and staged-file names go through the group-by-key, never serialized records.
Without `plan`, a record's group is its split (WikiText-2: the source's split); with a
`plan` (Quora: stratified by label), `plan([(key, group)])` returns {key: split} over
all accepted records. The shard of a record is a stable hash of its key.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import pickle
import re
import tempfile
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

from kflow.components.util.progress import RecordProgress
from kflow.pipeline.dsl.artifacts import Examples, Rejects
from kflow.pipeline.dsl.config import named_runner

INVALID = "invalid"
FILTERED = "filtered"
_REJECTS = "rejects"
_POSITION = re.compile(r"(.*)[:#](\d+)")
_JSON = json.JSONEncoder(sort_keys=True)  # One encoder for every reject line (json.dumps builds one per call).

Accepted = tuple[str, str, bytes]  # (key, group, serialized tf.train.Example)
ProcessChunk = Callable[[Any], tuple[list[Accepted], list[dict[str, Any]]]]


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
    plan: Callable[[list[tuple[str, str]]], dict[str, str]] | None = None,
    extra_rejects: Sequence[dict[str, Any]] = (),
) -> dict[str, Any]:
    """Runs the ingest pipeline and returns stats.json: read, accepted per split, rejected per reason.

    `extra_rejects` are rejects the driver found (e.g. CSV rows it could not cut out of the file).
    """
    if isinstance(shards, bool) or not isinstance(shards, int) or shards < 1:
        raise ValueError(f"shards_per_split must be a positive integer, got {shards!r}")
    for artifact in (examples, rejects):
        artifact.path.mkdir(parents=True, exist_ok=True)
    every_shard = [((split, shard), None) for split in splits for shard in range(shards)]
    with tempfile.TemporaryDirectory(prefix="kflow-ingest-") as staging:
        with beam.Pipeline(options=PipelineOptions(named_runner(beam_args))) as pipeline:
            processed = (
                pipeline
                | "Chunks" >> beam.Create(list(chunks), reshuffle=False)
                | "Process"
                >> beam.ParDo(_Process(process_chunk, staging, read, _in_process(beam_args))).with_outputs(
                    _REJECTS, main="staged"
                )
            )
            if plan is None:
                routed = processed.staged | "Route" >> beam.ParDo(_Route(shards, tuple(splits)), None)
            else:
                assignment = (
                    processed.staged
                    | "Keys" >> beam.Map(lambda staged: staged[1])
                    | "AllKeys" >> beam.combiners.ToList()
                    | "Plan" >> beam.Map(lambda lists: plan(list(itertools.chain.from_iterable(lists))))
                )
                routed = processed.staged | "Route" >> beam.ParDo(
                    _Route(shards, tuple(splits)), beam.pvalue.AsSingleton(assignment)
                )
            shard_counts = (
                (routed, pipeline | "EveryShard" >> beam.Create(every_shard, reshuffle=False))
                | "FlattenRecords" >> beam.Flatten()
                | "GroupByShard" >> beam.GroupByKey()
                | "WriteShards" >> beam.ParDo(_WriteShard(examples, shards))
            )
            driver_rejects = [_stage_rejects(list(extra_rejects), staging)] if extra_rejects else []
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
                    beam.pvalue.AsList(shard_counts),
                    beam.pvalue.AsList(found_rejects),
                )
            )
    return examples.stats


def _in_process(beam_args: Sequence[str]) -> bool:
    """Whether the chunks are processed in this process (so one progress bar can show them all)."""
    options = PipelineOptions(list(beam_args)).get_all_options()
    return options.get("runner") in (None, "DirectRunner") and options.get("direct_running_mode") != "multi_processing"


class _Process(beam.DoFn):
    """Runs `process_chunk` on a chunk, stages its accepted records; emits (file, [(key, group)]) and rejects.

    Shows the records processed out of `read`: as a bar when every chunk is processed here, else
    as a log line at each tenth from each worker."""

    def __init__(self, process_chunk: ProcessChunk, staging: str, read: int, one_bar: bool):
        self._process_chunk = process_chunk
        self._staging = staging
        self._read, self._one_bar = read, one_bar
        self._progress: RecordProgress | None = None

    def setup(self):
        self._progress = RecordProgress("ingest", self._read, allow_bar=self._one_bar)

    def teardown(self):
        if self._progress is not None:
            self._progress.close()

    def process(self, chunk):
        accepted, found_rejects = self._process_chunk(chunk)
        if self._progress is not None:
            self._progress.add(len(accepted) + len(found_rejects))
        if accepted:
            path = Path(self._staging) / f"chunk-{uuid.uuid4().hex}.pkl"
            with path.open("wb") as file:
                pickle.dump({key: record for key, _group, record in accepted}, file, protocol=pickle.HIGHEST_PROTOCOL)
            yield str(path), [(key, group) for key, group, _record in accepted]
        if found_rejects:
            yield beam.pvalue.TaggedOutput(_REJECTS, _stage_rejects(found_rejects, self._staging))


def _stage_rejects(entries: list[dict[str, Any]], staging: str) -> tuple[str, dict[tuple[str, str], int]]:
    """Saves reject entries as (source order, JSON line) in a staged file; returns it and the counts by (kind, reason).

    Only the file name and the counts travel through Beam: side inputs of many small dicts
    cost more (Beam measures their deep size) than writing them.
    """
    path = Path(staging) / f"rejects-{uuid.uuid4().hex}.pkl"
    lines = [(_position_order(entry), _JSON.encode(entry)) for entry in entries]
    path.write_bytes(pickle.dumps(lines, protocol=pickle.HIGHEST_PROTOCOL))
    return str(path), Counter((entry["kind"], entry["reason"]) for entry in entries)


class _Route(beam.DoFn):
    """Emits ((split, shard), (staged file, [keys])) for the records of a staged chunk."""

    def __init__(self, shards: int, splits: tuple[str, ...]):
        self._shards = shards
        self._splits = splits

    def process(self, staged, assignment):
        path, keys = staged
        routes: dict[tuple[str, int], list[str]] = {}
        for key, group in keys:
            split = group if assignment is None else assignment[key]
            if split not in self._splits:
                raise RuntimeError(f"ingest: record {key!r} was routed to the unknown split {split!r}")
            routes.setdefault((split, stable_hash(key) % self._shards), []).append(key)
        for split_shard, shard_keys in routes.items():
            yield split_shard, (path, shard_keys)


class _WriteShard(beam.DoFn):
    """Writes the records of one shard sorted by key; emits (split, shard, record count)."""

    def __init__(self, examples: Examples, shards: int):
        self._examples = examples
        self._shards = shards

    def process(self, element):
        import tensorflow as tf  # Only the workers that write need TensorFlow.

        (split, shard), batches = element
        records = []
        for path, keys in filter(None, batches):  # Without the None batch every shard gets.
            with open(path, "rb") as file:
                staged = pickle.load(file)
            records.extend((key, staged[key]) for key in keys)
        records.sort()
        folder = self._examples.split_uri(split)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"data_tfrecord-{shard:05d}-of-{self._shards:05d}.gz"
        with tf.io.TFRecordWriter(str(path), options="GZIP") as writer:
            for _, record in records:
                writer.write(record)
        yield split, shard, len(records)


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
        lines = []
        for path, counts in staged_rejects:
            for (kind, reason), count in counts.items():
                by_kind[kind][reason] += count
            lines.extend(pickle.loads(Path(path).read_bytes()))
        lines.sort(key=lambda line: line[0])
        rejected = dict(sorted((by_kind[INVALID] + by_kind[FILTERED]).items()))
        if self._read != sum(accepted.values()) + sum(rejected.values()):
            raise RuntimeError(
                f"ingest: the counts do not add up: read {self._read}, accepted {accepted}, rejected {rejected}"
            )
        self._rejects.file.write_text("".join(line + "\n" for _, line in lines))
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

    A key's part before its first "|" is hashed; the rest breaks ties (e.g. the position that
    makes a repeated record's key unique), so equal records stay next to each other.
    """

    weights: dict[str, int]

    def __call__(self, items: list[tuple[str, str]]) -> dict[str, str]:
        by_label: dict[str, list[str]] = {}
        for key, label in items:
            by_label.setdefault(label, []).append(key)
        names = sorted(self.weights)
        total = sum(self.weights.values())
        assignment = {}
        for keys in by_label.values():
            keys.sort(key=lambda key: (stable_hash(key.partition("|")[0]), key))
            start, cumulative = 0, 0
            for name in names:
                cumulative += self.weights[name]
                stop = round(len(keys) * cumulative / total)
                assignment.update(dict.fromkeys(keys[start:stop], name))
                start = stop
        return assignment
