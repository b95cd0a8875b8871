"""The TFRecord ingest executor (ImportExampleGen-like): existing tf.train.Example files in, kflow's Examples out.

The driver lists the files (a file, a folder or a glob; plain or gzipped, told by their bytes),
reads each once to count its records, cut it into chunks of CHUNK_RECORDS records (byte offsets;
a gzipped file is first decompressed, streaming, into the staging folder) and learn the feature
types from the first `infer_records` Examples (int64_list → int, float_list → float, bytes_list →
string). Each chunk is one Beam element: a worker reads its records from their offset, checks
every record and copies the valid ones as they are (the same bytes) into the splits. Reasons a
record is refused (position `file#index`):

    invalid: corrupt_record (TFRecord framing or CRC broken: the rest of that file is unreadable
             and the file's remaining count is unknown, so the one record stands for it),
             not_an_example, unexpected_feature, type_mismatch, multi_valued,
             bad_label (regression: not a number), duplicate_key, empty_key
    filtered: missing_label (a record without a label: left out and counted)

Splits: `split_files` ({split: glob}) assigns whole files to splits, as the source was split;
otherwise `split` shares, stratified by label for classification, by a hash of each record's
key (`key` feature, else the record's bytes).
"""

from __future__ import annotations

import fnmatch
import hashlib
import itertools
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from google.protobuf import text_format

from kflow.components.datasets.tabular.columns import check_classes, infer_problem_type
from kflow.components.datasets.tabular.examples import (
    KINDS,
    SOURCE_ROW,
    check_problem_type,
    example_problem,
    group_of,
)
from kflow.components.datasets.tabular.table_files import table_files
from kflow.components.datasets.tabular.table_ingest import Table, TableReader, ingest_table
from kflow.components.ingest import ingest_staging
from kflow.components.ingest.compressed import is_gzip
from kflow.components.ingest.ingest_job import IngestJob
from kflow.components.ingest.ingest_records import INVALID, kind_of, make_reject
from kflow.components.ingest.repeats import RepeatFinder
from kflow.components.ingest.tfrecord_file import read_records
from kflow.components.util.encoded_images import image_kind, looks_like_pixels, square_image
from kflow.components.util.example_proto import Example, example_of, feature_encoder

log = logging.getLogger(__name__)

CHUNK_RECORDS = 5000


def run(**parameters: Any) -> dict[str, Any]:
    """Ingests the TFRecord files (`parameters`: the component's, and its outputs); returns {"read": N,
    "<split>": n, ..., "rejected": r, "invalid": i, ...}."""
    return ingest_table(TfRecordReader, parameters)


@dataclass(frozen=True)
class TfRecordReader(TableReader):
    dataset: ClassVar[str] = "tfrecord"
    formats: ClassVar[tuple[str, ...]] = ("tfrecord",)
    problem_type: str | None = None  # None: inferred from the sampled labels, as a CSV's
    split_files: dict[str, str] | None = None
    infer_records: int = 1000

    def scan(self, job: IngestJob, staging: ingest_staging.Staging) -> Table:
        files = resolve(job.source_path)
        assignment = assign_files(files, self.split_files, job.source_path) if self.split_files else None
        split = self.shares(job) if assignment is None else tuple(sorted(set(assignment.values())))
        readable = {
            path: staging.plain_copy(path, f"source-{index:05d}.tfrecord")
            for index, path in enumerate(files)
            if is_gzip(path)
        }
        label, key = self.label, self.key
        # Data to score without a key: kflow's own Examples (predict's, a scoring ingest's) hold each record's place
        # in the source it was first read from (SOURCE_ROW), kept as the key where it names every record once.
        places = SOURCE_ROW if label is None and key is None else None
        found = scan(files, self.infer_records, job.max_records, key, readable, label, places)
        types = found.types
        if places in types:
            key = recorded_places(found)
        refuse_what_is_no_table(found, label, files)
        problem_type = None if label is None else self.problem_type  # data to score: no label, no task
        if label in types and problem_type is None:  # as a CSV's: a float label was 400 "classes" of 442 rows
            problem_type, reason = infer_problem_type(label, types[label], found.labels)
            log.info("tfrecord ingest: data.problem_type not set: %s, as %s", problem_type, reason)
        check_problem_type(label, problem_type, key, list(types))
        if problem_type == "regression" and types[label] not in ("int", "float"):
            raise ValueError(f"data.label: regression needs a numeric label; feature {label!r} is {types[label]}")
        if problem_type == "classification":
            check_classes(label, types[label], found.labels)
        log.info("tfrecord ingest: %d records in %d file(s); feature types %s", found.read, len(files), types)
        chunks = [replace(chunk, split=assignment[chunk.source] if assignment else None) for chunk in found.chunks]
        processor = RecordProcessor(types, label, problem_type, key)
        if places in types and key is None:  # each record keyed by its place here: the old one is replaced
            types = {name: kind for name, kind in types.items() if name != SOURCE_ROW}
        return Table(files, types, label, problem_type, found.read, chunks, processor, split, key=key)


def source_files(*, source_path: str | None = None, **_: Any) -> list[Path]:
    return [Path(path) for path in resolve(source_path)]


def resolve(source_path: str | None) -> list[str]:
    """The TFRecord files: a file, every file of a folder, or a glob pattern, sorted by name."""
    return table_files("tfrecord", source_path, (), "file")


def assign_files(files: list[str], split_files: dict[str, str], source_path: str | None) -> dict[str, str]:
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


def _records(path: str, start: int = 0, first_index: int = 0) -> Iterator[tuple[int, int, bytes | None]]:
    """(index, byte offset, serialized record) of an uncompressed TFRecord file from byte `start`, whose record
    is the `first_index`-th; a broken record (framing or CRC) ends it with (index, offset, None)."""
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as stream:
        stream.seek(start)
        for index, (offset, record) in enumerate(read_records(stream), first_index):
            yield index, offset, record


@dataclass(frozen=True)
class FileChunk:
    """`count` records of the file `path` from byte `start`, where its `first_index`-th record begins; `source`
    is the file the user gave (`path` is its decompressed copy when it is gzipped)."""

    path: str
    source: str
    start: int
    first_index: int
    count: int
    split: str | None = None  # the split every record of the file goes to (split_files), else None
    duplicate_indices: frozenset[int] = frozenset()


@dataclass
class Scan:
    read: int = 0
    types: dict[str, str] = field(default_factory=dict)
    chunks: list[FileChunk] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)  # the label's value in each sampled record that holds one
    images: dict[str, str] = field(default_factory=dict)  # {feature: image format} of bytes features of encoded images
    # {feature: (its values' count, the first record's numbers)} of the features of one count in every sampled record
    lists: dict[str, tuple[int, list]] = field(default_factory=dict)
    sampled: int = 0  # the records read as Examples to learn the above from
    keyed: int = 0  # the records that hold a value of the key (the declared one, or the `places` feature)


def scan(
    files: list[str],
    infer_records: int,
    max_records: int | None,
    key: str | None,
    readable: dict[str, str],
    label: str | None = None,
    places: str | None = None,
) -> Scan:
    """One pass over the files: the records (a broken record counts once and ends its file) cut into chunks,
    the feature types, the `label`'s values in the sampled records, and the records whose key an earlier record
    has (parsed only when a key is declared, or the feature `places` is among the sampled ones, the key it may be;
    found with 16 bytes a record: `components/ingest/repeats.py`)."""
    found, keys = Scan(), RepeatFinder()
    wanted = key if key is not None else places
    firsts = []  # Each chunk's first record, counted over all files.
    for path in files:
        chunk: dict[str, Any] | None = None
        for index, offset, record in _records(readable.get(path, path)):
            if max_records is not None and found.read >= max_records:
                break
            if chunk is None:
                chunk = {"start": offset, "first_index": index, "count": 0}
                firsts.append(found.read)
            found.read += 1
            chunk["count"] += 1
            if record is not None and (found.sampled < infer_records or key is not None or wanted in found.types):
                try:
                    example = Example.FromString(record)
                except Exception:  # noqa: BLE001 - protobuf raises DecodeError and others; the worker rejects it.
                    example = None
                if example is not None and found.sampled < infer_records:
                    learn(found, example, label)
                if example is not None and wanted is not None and _holds(example, wanted):
                    keys.add(_value(example, wanted).encode(), found.read - 1)
                    found.keyed += 1
            if chunk["count"] == CHUNK_RECORDS:
                found.chunks.append(_chunk(readable.get(path, path), path, chunk))
                chunk = None
        if chunk is not None:
            found.chunks.append(_chunk(readable.get(path, path), path, chunk))
    found.types = dict(sorted(found.types.items()))
    ranges = [(first, first + chunk.count) for chunk, first in zip(found.chunks, firsts, strict=True)]
    found.chunks = [
        replace(chunk, duplicate_indices=frozenset(chunk.first_index + ordinal - first for ordinal in inside))
        for chunk, first, inside in zip(found.chunks, firsts, keys.repeats_within(ranges), strict=True)
    ]
    return found


def recorded_places(found: Scan) -> str | None:
    """SOURCE_ROW, where every record holds one and none repeats another's: the records' key, as it keyed their
    predictions when kflow first read them; else None (said in the log): each record is keyed by its place here."""
    repeated = any(chunk.duplicate_indices for chunk in found.chunks)
    if found.keyed == found.read and not repeated:
        log.info(
            "tfrecord ingest: %r, kflow's record of each record's place in the source it was first read from, keys "
            "the records (kflow's own Examples: scored by kflow predict, or read by an ingest)", SOURCE_ROW,
        )  # fmt: skip
        return SOURCE_ROW
    log.warning(
        "tfrecord ingest: %r (kflow's record of each record's place in the source it was first read from) %s: each "
        "record is keyed by its place here (FILE#INDEX) instead", SOURCE_ROW,
        "repeats values" if repeated else f"is missing from {found.read - found.keyed} record(s)",
    )  # fmt: skip
    return None


def learn(found: Scan, example: Any, label: str | None) -> None:
    """What a sampled Example says: its features' types, lists and encoded images, and the label's value."""
    found.sampled += 1
    for name, feature in example.features.feature.items():
        kind = KINDS.get(feature.WhichOneof("kind") or "")
        if kind == "string" and name not in found.types and feature.bytes_list.value:
            if image := image_kind(feature.bytes_list.value[0]):
                found.images[name] = image
        if kind is not None:
            values = getattr(feature, feature.WhichOneof("kind")).value
            if name not in found.types:
                found.lists[name] = (len(values), list(values) if kind != "string" else [])
            elif found.lists.get(name, (None,))[0] != len(values):
                found.lists.pop(name, None)
            found.types.setdefault(name, kind)
    if label is not None and _holds(example, label):
        found.labels.append(_value(example, label))


def refuse_what_is_no_table(found: Scan, label: str | None, files: list[str]) -> None:
    """A ValueError naming data.source.path for a source whose sampled records hold no tf.train.Example (another
    format's file), or images: encoded, or as pixels."""
    if found.read and not found.sampled:
        raise ValueError(
            f"data.source.path: {files[0]} holds no tf.train.Example that reads (TFRecord framing or the Example "
            "protocol buffer broken from its first record): is it a TFRecord file of Examples?"
        )
    if found.images:  # read as strings they would be a category a record, and the model would learn nothing
        name, image = next(iter(found.images.items()))
        raise ValueError(
            f"data.source.path: the feature {name!r} holds encoded images ({image}): read them with data.dataset: "
            f"images (data.label: {label or 'the label feature'}), which decodes them and trains an image model"
        )
    pixels = {
        name: count
        for name, (count, first) in found.lists.items()
        if name != label and square_image(count) and looks_like_pixels(name, first)
    }
    if pixels:  # a table holds a value a column: every record would be a multi_valued reject
        name, count = next(iter(pixels.items()))
        raise ValueError(
            f"data.source.path: the feature {name!r} holds {count} values a record, an image's pixels as they "
            f"look ({square_image(count)}): read them with data.dataset: images, which trains an image model on "
            "them"
        )


def _chunk(path: str, source: str, chunk: dict[str, Any]) -> FileChunk:
    return FileChunk(path, source, chunk["start"], chunk["first_index"], chunk["count"])


@dataclass(frozen=True)
class RecordProcessor:
    types: dict[str, str]
    label: str | None  # None: data to score, each record keyed by its key feature or its position (SOURCE_ROW)
    problem_type: str | None
    key: str | None

    def __call__(self, chunk: FileChunk) -> tuple[list, list]:
        accepted, found = [], []
        name = Path(chunk.source).name
        for index, _, record in itertools.islice(_records(chunk.path, chunk.start, chunk.first_index), chunk.count):
            position = f"{name}#{index}"
            if record is None:
                found.append(make_reject("corrupt_record", INVALID, position, None))
                continue
            try:
                example = Example.FromString(record)
            except Exception as error:  # noqa: BLE001 - any parse failure means "not an Example".
                found.append(make_reject("not_an_example", INVALID, position, record[:200].hex(), error=str(error)))
                continue
            problem = example_problem(example, self.types, self.label, self.problem_type)
            if problem is None and self.key is not None:
                if not example.features.feature[self.key].WhichOneof("kind"):
                    problem = ("empty_key", {"feature": self.key})
                elif index in chunk.duplicate_indices:
                    problem = ("duplicate_key", {"feature": self.key, "key": _value(example, self.key)})
            if problem is not None:
                reason, details = problem
                found.append(make_reject(reason, kind_of(reason), position, _text(example), **details))
                continue
            key = _value(example, self.key) if self.key else f"{hashlib.sha1(record).hexdigest()[:16]}|{position}"
            group = chunk.split if chunk.split is not None else group_of(example, self.label, self.problem_type)
            if self.label is None and self.key is None:
                # A second `features` field merges into the first (protobuf): the record's FILE#INDEX beside it.
                record += example_of([feature_encoder(SOURCE_ROW, "bytes")(position)])
            accepted.append((key, group, record))
        return accepted, found


def _holds(example: Any, name: str) -> bool:
    """Whether the example holds a value of the feature `name`."""
    feature = example.features.feature.get(name)
    kind = feature.WhichOneof("kind") if feature is not None else None
    return kind is not None and len(getattr(feature, kind).value) > 0


def _value(example: Any, name: str) -> str:
    feature = example.features.feature[name]
    value = getattr(feature, feature.WhichOneof("kind")).value[0]
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _text(example: Any) -> str:
    return text_format.MessageToString(example, as_one_line=True)[:2000]
