"""The TFRecord ingest executor (ImportExampleGen-like): existing tf.train.Example files in, kflow's Examples out.

The driver lists the files (a file, a folder or a glob; plain or gzipped, told by their bytes),
reads each once to count its records and learns the feature types from the first
`infer_records` Examples (int64_list → int, float_list → float, bytes_list → string). Each file
is one Beam element: a worker reads it, checks every record and copies the valid ones as they
are (the same bytes) into the splits. Reasons a record is refused (position `file#index`):

    invalid: corrupt_record (TFRecord framing or CRC broken: the rest of that file is unreadable
             and the file's remaining count is unknown, so the one record stands for it),
             not_an_example, unexpected_feature, type_mismatch, multi_valued, missing_label,
             bad_label (regression: not a number), duplicate_key, empty_key

Splits: `split_files` ({split: glob}) assigns whole files to splits, as the source was split;
otherwise `split` shares, stratified by label for classification, by a hash of each record's
key (`key` feature, else the record's bytes).
"""

from __future__ import annotations

import fnmatch
import glob
import hashlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from google.protobuf import text_format

from kflow.components.datasets.tabular.examples import KINDS, build_schema, check_task, example_problem, group_of
from kflow.components.util import beam_ingest
from kflow.components.util.beam_ingest import INVALID, StratifiedPlan, make_reject
from kflow.pipeline.dsl.artifacts import Examples, Rejects, Schema

log = logging.getLogger(__name__)

DEFAULT_SPLIT = {"train": 8, "eval": 1, "test": 1}


def run(
    *,
    examples: Examples,
    schema: Schema,
    rejects: Rejects,
    source_path: str | None = None,
    source_format: str = "auto",
    label: str | None = None,
    task: str = "classification",
    key: str | None = None,
    split_files: dict[str, str] | None = None,
    infer_records: int = 1000,
    split: dict[str, int] | None = None,
    shards_per_split: int = 0,
    max_records: int | None = None,
    max_invalid_fraction: float = 0.01,
    beam_args: Sequence[str] = (),
) -> dict[str, Any]:
    """Ingests the TFRecord files; returns {"read": N, "<split>": n, ..., "rejected": r, "invalid": i, ...}."""
    if source_format not in ("auto", "tfrecord"):
        raise ValueError(f"tfrecord: source_format must be auto or tfrecord, got {source_format!r}")
    beam_ingest.check_fraction("max_invalid_fraction", max_invalid_fraction)
    files = resolve(source_path)
    assignment = _assign(files, split_files, source_path) if split_files else None
    if assignment is None:
        split = DEFAULT_SPLIT if split is None else split
        beam_ingest.check_split_shares(split, ("train", "eval", "test"))
    counts, types, duplicates = scan(files, infer_records, max_records, key)
    check_task(label, task, key, list(types))
    if task == "regression" and types[label] not in ("int", "float"):
        raise ValueError(f"data.label: regression needs a numeric label; feature {label!r} is {types[label]}")
    schema.path.mkdir(parents=True, exist_ok=True)
    schema.file.write_text(text_format.MessageToString(build_schema(types, label, task, key)))
    read = sum(counts.values())
    if read == 0:
        raise ValueError(f"tfrecord: {', '.join(files)} hold no records")
    log.info("tfrecord ingest: %d records in %d file(s); feature types %s", read, len(files), types)
    chunks = [
        FileChunk(path, counts[path], assignment[path] if assignment else None, duplicates.get(path, frozenset()))
        for path in files
        if counts[path]
    ]
    splits = tuple(sorted(set(assignment.values()))) if assignment else tuple(split)
    stats = beam_ingest.run_ingest_pipeline(
        chunks=chunks,
        process_chunk=RecordProcessor(types, label, task, key),
        splits=splits,
        shards=shards_per_split,
        read=read,
        examples=examples,
        rejects=rejects,
        beam_args=beam_args,
        plan=None if assignment else StratifiedPlan(dict(split)),
    )
    return beam_ingest.ingest_summary(stats, max_invalid_fraction, rejects)


def source_files(*, source_path: str | None = None, **_: Any) -> list[Path]:
    return [Path(path) for path in resolve(source_path)]


def resolve(source_path: str | None) -> list[str]:
    """The TFRecord files: a file, every file of a folder, or a glob pattern, sorted by name."""
    if not source_path:
        raise ValueError("data.source.path: the tfrecord dataset needs a file, a folder or a glob pattern")
    path = Path(source_path).expanduser()
    if path.is_dir():
        files = sorted(str(p) for p in path.iterdir() if p.is_file() and not p.name.startswith("."))
    elif path.is_file():
        files = [str(path)]
    else:
        files = sorted(name for name in glob.glob(str(path)) if Path(name).is_file())
    if not files:
        raise ValueError(f"data.source.path: {source_path} matches no file")
    return files


def _assign(files: list[str], split_files: dict[str, str], source_path: str | None) -> dict[str, str]:
    """{file: split} from {split: glob on the file name}; every file must match exactly one split."""
    if not isinstance(split_files, dict) or not {"train", "eval"} <= set(split_files):
        raise ValueError(
            f"data.split_files: give at least train and eval patterns, e.g. {{train: 'train-*'}}; got {split_files!r}"
        )
    assignment = {}
    for path in files:
        matches = [name for name, pattern in split_files.items() if fnmatch.fnmatch(Path(path).name, pattern)]
        if len(matches) != 1:
            raise ValueError(
                f"data.split_files: {Path(path).name} matches {f'the splits {matches}' if matches else 'no split'}; "
                f"each file of {source_path} must match exactly one pattern"
            )
        assignment[path] = matches[0]
    empty = sorted(set(split_files) - set(assignment.values()))
    if empty:
        raise ValueError(f"data.split_files: no file matches the splits {empty}")
    return assignment


def _records(path: str):
    """(index, serialized record) of a TFRecord file; a broken record ends it with (index, None)."""
    import tensorflow as tf

    from kflow.components.util.compressed import is_gzip

    dataset = tf.data.TFRecordDataset(path, compression_type="GZIP" if is_gzip(path) else "")
    iterator = iter(dataset)
    index = 0
    while True:
        try:
            record = next(iterator)
        except StopIteration:
            return
        except tf.errors.DataLossError:
            yield index, None
            return
        yield index, record.numpy()
        index += 1


def scan(
    files: list[str], infer_records: int, max_records: int | None, key: str | None
) -> tuple[dict[str, int], dict[str, str], dict[str, frozenset[int]]]:
    """Each file's record count (a broken record counts once and ends the file), the feature types, and
    the records whose key an earlier record has ({file: indices}; parsed only when a key is declared)."""
    from tensorflow.core.example import example_pb2

    counts, types, sampled, total, seen, duplicates = {}, {}, 0, 0, set(), {}
    for path in files:
        counts[path], repeated = 0, set()
        for index, record in _records(path):
            if max_records is not None and total >= max_records:
                break
            counts[path] += 1
            total += 1
            if record is None or (sampled >= infer_records and key is None):
                continue
            try:
                example = example_pb2.Example.FromString(record)
            except Exception:  # noqa: BLE001 - protobuf raises DecodeError and others; the worker rejects it.
                continue
            if sampled < infer_records:
                sampled += 1
                for name, feature in example.features.feature.items():
                    kind = KINDS.get(feature.WhichOneof("kind") or "")
                    if kind is not None:
                        types.setdefault(name, kind)
            if key is not None and example.features.feature[key].WhichOneof("kind"):
                value = _value(example, key)
                if value in seen:
                    repeated.add(index)
                seen.add(value)
        duplicates[path] = frozenset(repeated)
    return counts, dict(sorted(types.items())), duplicates


@dataclass(frozen=True)
class FileChunk:
    path: str
    count: int
    split: str | None  # the split every record of the file goes to (split_files), else None
    duplicate_indices: frozenset[int] = frozenset()


@dataclass(frozen=True)
class RecordProcessor:
    types: dict[str, str]
    label: str
    task: str
    key: str | None

    def __call__(self, chunk: FileChunk) -> tuple[list, list]:
        from tensorflow.core.example import example_pb2

        accepted, found = [], []
        name = Path(chunk.path).name
        for index, record in _records(chunk.path):
            if index >= chunk.count:
                break
            position = f"{name}#{index}"
            if record is None:
                found.append(make_reject("corrupt_record", INVALID, position, None))
                continue
            try:
                example = example_pb2.Example.FromString(record)
            except Exception as error:  # noqa: BLE001 - any parse failure means "not an Example".
                found.append(make_reject("not_an_example", INVALID, position, record[:200].hex(), error=str(error)))
                continue
            problem = example_problem(example, self.types, self.label, self.task)
            if problem is None and self.key is not None:
                if not example.features.feature[self.key].WhichOneof("kind"):
                    problem = ("empty_key", {"feature": self.key})
                elif index in chunk.duplicate_indices:
                    problem = ("duplicate_key", {"feature": self.key, "key": _value(example, self.key)})
            if problem is not None:
                reason, details = problem
                found.append(make_reject(reason, INVALID, position, _text(example), **details))
                continue
            key = _value(example, self.key) if self.key else f"{hashlib.sha1(record).hexdigest()[:16]}|{position}"
            group = chunk.split if chunk.split is not None else group_of(example, self.label, self.task)
            accepted.append((key, group, record))
        return accepted, found


def _value(example: Any, name: str) -> str:
    feature = example.features.feature[name]
    value = getattr(feature, feature.WhichOneof("kind")).value[0]
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _text(example: Any) -> str:
    return text_format.MessageToString(example, as_one_line=True)[:2000]
