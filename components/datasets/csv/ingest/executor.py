"""The CSV ingest executor: any CSV files in, typed tf.train.Example TFRecords split three ways out.

The driver reads every file once, streaming (components/datasets/csv/ingest/records.py): it
checks the headers, counts the records, samples the first `infer_rows` to infer the column
types that the config does not declare, marks repeated keys when a key column is declared,
and cuts the files into chunks of CHUNK_ROWS records (byte ranges; a gzipped file is first
decompressed, streaming, into the staging folder, so that it is cut like the others). The Beam
pipeline (components/util/beam_ingest.py) then parses each chunk in a worker. Reasons a record
is refused, the first that applies:

    invalid: unterminated_quote, non_utf8, bad_csv, wrong_field_count, missing_label,
             bad_value (a value that does not parse as its column's type; the column is named),
             bad_label (regression: not a number), empty_key, duplicate_key

Split: classification is stratified by label, regression is not; within each group the records
are ordered by a hash of their key (the key column, else the record's content) and cut by
quota, so the assignment depends on neither the file order nor the other records.
"""

from __future__ import annotations

import csv
import glob
import hashlib
import io
import itertools
import json
import logging
import shutil
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from google.protobuf import text_format

from kflow.components.datasets.csv.ingest import columns as cols
from kflow.components.datasets.csv.ingest.records import Record, cut
from kflow.components.datasets.tabular.examples import build_schema
from kflow.components.util import beam_ingest
from kflow.components.util.beam_ingest import INVALID, StratifiedPlan, make_reject, raw_text
from kflow.components.util.compressed import is_gzip, open_source
from kflow.components.util.file_chunk import FileChunk as Chunk
from kflow.components.util.repeats import RepeatFinder
from kflow.pipeline.dsl.artifacts import Examples, Rejects, Schema

log = logging.getLogger(__name__)

CHUNK_ROWS = 5000
DEFAULT_SPLIT = {"train": 8, "eval": 1, "test": 1}
DEFAULT_FORMAT = {"delimiter": ",", "quotechar": '"', "header": True, "missing_values": list(cols.DEFAULT_MISSING)}


def run(
    *,
    examples: Examples,
    schema: Schema,
    rejects: Rejects,
    source_path: str | None = None,
    source_format: str = "auto",
    label: str | None = None,
    task: str | None = None,
    key: str | None = None,
    columns: dict[str, str] | None = None,
    csv_format: dict[str, Any] | None = None,
    infer_rows: int = 10_000,
    split: dict[str, int] | None = None,
    shards_per_split: int = 0,
    max_records: int | None = None,
    max_invalid_fraction: float = 0.01,
    beam_args: Sequence[str] = (),
) -> dict[str, Any]:
    """Ingests the CSV files; returns {"read": N, "<split>": n, ..., "rejected": r, "invalid": i, "filtered": f}."""
    split = DEFAULT_SPLIT if split is None else split
    beam_ingest.check_split_shares(split, ("train", "eval", "test"))
    beam_ingest.check_fraction("max_invalid_fraction", max_invalid_fraction)
    if source_format not in ("auto", "csv"):
        raise ValueError(f"csv: source_format must be auto or csv, got {source_format!r}")
    dialect = Dialect.from_options(csv_format)
    files = resolve(source_path)
    # The staged copies of gzipped files live until the pipeline has finished, where every worker reads them.
    with beam_ingest.Staging(beam_args) as staging:
        readable = {
            path: staging.plain_copy(path, f"source-{index:05d}.csv")
            for index, path in enumerate(files)
            if is_gzip(path)
        }
        scan = scan_files(files, dialect, key=None, max_records=max_records, sample=infer_rows, readable=readable)
        facts = source_facts(scan, dialect, label, task, key, columns)
        types, task = facts.types, facts.task
        if facts.task_reason:
            log.info("csv ingest: data.task not set: %s, as %s (set data.task to choose)", task, facts.task_reason)
        if key is not None:  # A second pass only for the keys: most CSVs declare none.
            scan = scan_files(files, dialect, key=key, max_records=max_records, sample=infer_rows, readable=readable)
        proto = build_schema(types, label, task, key)
        schema.path.mkdir(parents=True, exist_ok=True)
        schema.file.write_text(text_format.MessageToString(proto))
        if scan.read == 0:
            raise ValueError(f"csv: {', '.join(files)} hold no records after their header")
        inferred = {name: kind for name, kind in types.items() if name not in (columns or {})}
        log.info("csv ingest: %d records in %d file(s); inferred types %s", scan.read, len(files), inferred)
        widenable = frozenset(
            name for name, kind in inferred.items() if kind == "int" and (name != label or task == "regression")
        )
        while True:
            stats = beam_ingest.run_ingest_pipeline(
                chunks=scan.chunks,
                process_chunk=ChunkProcessor(tuple(scan.header), types, dialect, label, task, key, widenable),
                splits=tuple(split),
                shards=shards_per_split,
                read=scan.read,
                examples=examples,
                rejects=rejects,
                beam_args=beam_args,
                plan=StratifiedPlan(dict(split)),
                staging=staging,
            )
            widened = decimals_in_int_columns(stats, rejects)
            if not widened:
                break
            # Types come from a sample: a column of whole numbers there may hold decimals further on. Its values
            # are numbers, not errors: read everything again with the column as float (rare, so a second pass).
            log.info("csv ingest: %s", "; ".join(f"{name!r} holds decimals ({where})" for name, where in widened))
            log.info("csv ingest: reading again with %s as float", ", ".join(repr(name) for name, _ in widened))
            types = {**types, **{name: "float" for name, _ in widened}}
            widenable = widenable - {name for name, _ in widened}
            schema.file.write_text(text_format.MessageToString(build_schema(types, label, task, key)))
            for folder in (examples.path, rejects.path):
                shutil.rmtree(folder)
                folder.mkdir(parents=True)
    return beam_ingest.ingest_summary(stats, max_invalid_fraction, rejects)


DECIMAL_IN_INT = "decimal_in_int_column"


def decimals_in_int_columns(stats: dict[str, Any], rejects: Rejects) -> list[tuple[str, str]]:
    """(column, first position) of each inferred int column whose records held a decimal number."""
    if not stats["invalid"].get(DECIMAL_IN_INT):
        return []
    first: dict[str, str] = {}
    with rejects.file.open() as lines:
        for line in lines:
            entry = json.loads(line)
            if entry["reason"] == DECIMAL_IN_INT:
                first.setdefault(entry["column"], entry["position"])
    return sorted(first.items())


@dataclass(frozen=True)
class SourceFacts:
    """What a sample of the source says: the columns, their types, the task, the label's values."""

    header: list[str]
    types: dict[str, str]
    task: str
    task_reason: str | None  # Why, when the task was inferred.
    labels: list[str]  # The distinct label values of the sample.
    sampled: int


def source_facts(
    scan: Scan, dialect: Dialect, label: Any, task: str | None, key: str | None, columns: dict[str, str] | None
) -> SourceFacts:
    """The checks of the header, the declared columns and the task that the ingest and `kflow validate` share."""
    declared = columns or {}
    types = cols.infer_types(scan.header, scan.sample, declared, dialect.missing)
    at = scan.header.index(label) if isinstance(label, str) and label in scan.header else None
    values = [row[at].strip() for row in scan.sample if at is not None and len(row) == len(scan.header)]
    values = [value for value in values if value not in dialect.missing]
    reason = None
    if task is None and at is not None:
        task, reason = cols.infer_task(label, types[label], values)
    cols.check_columns(scan.header, label, task, key, declared)
    if task == "regression" and types[label] not in ("int", "float"):
        raise ValueError(f"data.label: regression needs a numeric label; column {label!r} is {types[label]}")
    return SourceFacts(list(scan.header), types, task, reason, sorted(set(values)), len(scan.sample))


def inspect_source(
    *,
    source_path: str | None = None,
    label: Any = None,
    task: str | None = None,
    key: str | None = None,
    columns: dict[str, str] | None = None,
    csv_format: dict[str, Any] | None = None,
    infer_rows: int = 10_000,
    **_: Any,
) -> SourceFacts:
    """The source's facts from its first file's header and first `infer_rows` records (`kflow validate`):
    raises the ValueError the ingest would, naming the field."""
    files = resolve(source_path)
    dialect = Dialect.from_options(csv_format)
    scan = scan_files(files[:1], dialect, key=None, max_records=infer_rows, sample=infer_rows)
    return source_facts(scan, dialect, label, task, key, columns)


def source_files(*, source_path: str | None = None, **_: Any) -> list[Path]:
    """The files the ingest reads, for the data fingerprint in its cache key."""
    return [Path(path) for path in resolve(source_path)]


def resolve(source_path: str | None) -> list[str]:
    """The CSV files: a file, a folder (its *.csv and *.csv.gz files) or a glob pattern, sorted by name."""
    if not source_path:
        raise ValueError("data.source.path: the csv dataset needs a file, a folder or a glob pattern")
    path = Path(source_path).expanduser()
    if path.is_dir():
        files = sorted({*glob.glob(str(path / "*.csv")), *glob.glob(str(path / "*.csv.gz"))})
    elif path.is_file():
        files = [str(path)]
    else:
        files = sorted(name for name in glob.glob(str(path)) if Path(name).is_file())
    if not files:
        raise ValueError(f"data.source.path: {source_path} matches no CSV file")
    return files


@dataclass(frozen=True)
class Dialect:
    delimiter: str = ","
    quotechar: str | None = '"'
    header: tuple[str, ...] | None = None  # None: each file's first record is its header
    missing: frozenset[str] = frozenset(cols.DEFAULT_MISSING)

    @classmethod
    def from_options(cls, options: dict[str, Any] | None) -> Dialect:
        options = {**DEFAULT_FORMAT, **(options or {})}
        unknown = sorted(set(options) - set(DEFAULT_FORMAT))
        if unknown:
            raise ValueError(f"data.csv: unknown options {unknown} (allowed: {', '.join(DEFAULT_FORMAT)})")
        delimiter, quotechar, header = options["delimiter"], options["quotechar"], options["header"]
        if not isinstance(delimiter, str) or len(delimiter) != 1 or delimiter in "\r\n":
            raise ValueError(f"data.csv.delimiter: must be one character, got {delimiter!r}")
        if quotechar is not None and (not isinstance(quotechar, str) or len(quotechar) != 1 or quotechar == delimiter):
            raise ValueError(
                f"data.csv.quotechar: must be one character other than the delimiter or null, got {quotechar!r}"
            )
        if header is not True and not (isinstance(header, list) and header and all(isinstance(n, str) for n in header)):
            raise ValueError(
                f"data.csv.header: true (the files start with one) or the list of column names, got {header!r}"
            )
        missing = options["missing_values"]
        if not isinstance(missing, list) or not all(isinstance(token, str) for token in missing):
            raise ValueError(f"data.csv.missing_values: must be a list of strings, got {missing!r}")
        return cls(delimiter, quotechar, None if header is True else tuple(header), frozenset(missing))

    @property
    def quote(self) -> bytes | None:
        return None if self.quotechar is None else self.quotechar.encode()

    def split(self, text: str) -> list[list[str]]:
        """The CSV rows in `text` (one, for a well-formed record)."""
        if text and (self.quotechar is None or self.quotechar not in text) and "\r" not in text and "\n" not in text:
            return [text.split(self.delimiter)]  # What csv.reader returns for such a line, at a third of the cost.
        quoting = csv.QUOTE_NONE if self.quotechar is None else csv.QUOTE_MINIMAL
        return list(
            csv.reader(
                io.StringIO(text), delimiter=self.delimiter, quotechar=self.quotechar, quoting=quoting, strict=True
            )
        )


@dataclass
class Scan:
    header: list[str] = field(default_factory=list)
    read: int = 0
    chunks: list[Chunk] = field(default_factory=list)
    sample: list[list[str]] = field(default_factory=list)


def scan_files(
    files: list[str],
    dialect: Dialect,
    *,
    key: str | None,
    max_records: int | None,
    sample: int,
    readable: dict[str, str] | None = None,
) -> Scan:
    """One streaming pass over the files: header, record count, chunks, a sample of rows, repeated keys (found
    with 24 bytes a record: `components/util/repeats.py`).

    `readable`: a file's decompressed copy, to read and cut instead of the gzipped file (which cannot be
    cut: a chunk would have to decompress everything before it)."""
    scan = Scan()
    keys = RepeatFinder() if key is not None else None
    lines, chunk_starts = array("q"), []  # Each record's line in its file; each chunk's first record.
    for path in files:
        if max_records is not None and scan.read >= max_records:
            break
        source = (readable or {}).get(path, path)
        splittable = not is_gzip(source)
        with open_source(source) as stream:
            records = cut(stream, dialect.quote, delimiter=dialect.delimiter.encode())
            header, start, line = _header(path, records, dialect)
            if scan.header and header != scan.header:
                raise ValueError(f"csv: {path} has the columns {header}; {files[0]} has {scan.header}")
            scan.header = header
            key_index = header.index(key) if key is not None else None
            count = 0
            for record in records:
                if max_records is not None and scan.read >= max_records:
                    break
                wanted = not record.unterminated and (key_index is not None or len(scan.sample) < sample)
                row = _row(record.raw, dialect) if wanted else None
                if row is not None and len(scan.sample) < sample:
                    scan.sample.append(row)
                if keys is not None:
                    if row is not None and len(row) == len(header):
                        keys.add(row[key_index].strip().encode(), scan.read)
                    lines.append(record.line)
                if count == 0:
                    chunk_starts.append(scan.read)
                scan.read += 1
                count += 1
                if count == CHUNK_ROWS and splittable:
                    scan.chunks.append(Chunk(source, start, record.end, line, count, name=Path(path).name))
                    start, line, count = record.end, record.next_line, 0
            if count:
                scan.chunks.append(Chunk(source, start, None, line, count, name=Path(path).name))
    if keys is not None:
        ranges = [(first, first + chunk.count) for chunk, first in zip(scan.chunks, chunk_starts, strict=True)]
        scan.chunks = [
            replace(chunk, duplicate_lines=frozenset(lines[ordinal] for ordinal in inside))
            for chunk, inside in zip(scan.chunks, keys.repeats_within(ranges), strict=True)
        ]
    return scan


def _header(path: str, records: Iterator[Record], dialect: Dialect) -> tuple[list[str], int, int]:
    """The file's columns, and where its records start: byte offset and line number."""
    if dialect.header is not None:
        return list(dialect.header), 0, 1
    first = next(records, None)
    if first is None:
        raise ValueError(f"csv: {path} is empty (no header row)")
    if first.unterminated:
        raise ValueError(f"csv: the header of {path} has an unterminated quote")
    header = [name.strip() for name in (_row(first.raw.removeprefix(b"\xef\xbb\xbf"), dialect) or [])]
    if not header or any(not name for name in header):
        raise ValueError(f"csv: {path} line {first.line}: the header {header} has an empty column name")
    return header, first.end, first.next_line


def _row(raw: bytes, dialect: Dialect) -> list[str] | None:
    try:
        rows = dialect.split(raw.decode("utf-8").rstrip("\r\n"))
    except (UnicodeDecodeError, csv.Error):
        return None
    return rows[0] if len(rows) == 1 else None


def content_hash(fields: list[str]) -> str:
    """A record's identity for the split when it has no key: its fields as the CSV reader gives them, so that the
    same rows saved with other line endings, a BOM or other quoting land in the same split (0.4 µs a record;
    typed values, which would also equate `1.50` and `1.5`, cost 2.4)."""
    return hashlib.sha1("\x1f".join(fields).replace("\r\n", "\n").encode()).hexdigest()[:16]


@dataclass(frozen=True)
class ChunkProcessor:
    """Parses and validates the records of a chunk and serialises the valid ones as Examples."""

    header: tuple[str, ...]
    types: dict[str, str]
    dialect: Dialect
    label: str
    task: str
    key: str | None
    widenable: frozenset[str] = frozenset()  # Inferred int columns: a decimal there is DECIMAL_IN_INT, not bad.

    def __call__(self, chunk: Chunk) -> tuple[list, list]:
        from tensorflow.core.example import example_pb2

        accepted, found = [], []
        name = chunk.display_name
        with open_source(chunk.path) as stream:
            records = cut(
                stream,
                self.dialect.quote,
                start=chunk.start,
                end=chunk.end,
                first_line=chunk.first_line,
                delimiter=self.dialect.delimiter.encode(),
            )
            for record in itertools.islice(records, chunk.count):
                position = f"{name}:{record.line}"
                if record.unterminated:
                    found.append(
                        make_reject("unterminated_quote", INVALID, position, raw_text(record.raw.rstrip(b"\r\n")))
                    )
                    continue
                values, fields, problem = self.parse(record.raw, record.line in chunk.duplicate_lines)
                if problem is not None:
                    reason, details = problem
                    found.append(
                        make_reject(reason, INVALID, position, raw_text(record.raw.rstrip(b"\r\n")), **details)
                    )
                    continue
                example = example_pb2.Example()
                features = example.features.feature
                for column, value in values.items():
                    if isinstance(value, str):
                        features[column].bytes_list.value.append(value.encode("utf-8"))
                    elif isinstance(value, float):
                        features[column].float_list.value.append(value)
                    else:
                        features[column].int64_list.value.append(value)
                key = str(values[self.key]) if self.key else f"{content_hash(fields)}|{position}"
                group = str(values[self.label]) if self.task == "classification" else "all"
                accepted.append((key, group, example.SerializeToString(deterministic=True)))
        return accepted, found

    def parse(self, raw: bytes, duplicate: bool) -> tuple[dict[str, Any] | None, list[str], tuple[str, dict] | None]:
        """{column: value} of the present values and the record's fields, or the problem: (reason, details)."""
        try:
            text = raw.decode("utf-8").rstrip("\r\n").removeprefix("\ufeff")  # A BOM can only open a file.
        except UnicodeDecodeError as error:
            return None, [], ("non_utf8", {"error": str(error)})
        try:
            rows = self.dialect.split(text)
        except csv.Error as error:
            return None, [], ("bad_csv", {"error": str(error)})
        if len(rows) != 1 or len(rows[0]) != len(self.header):
            return None, [], ("wrong_field_count", {"expected": len(self.header), "found": [len(row) for row in rows]})
        values: dict[str, Any] = {}
        for column, field_text in zip(self.header, rows[0], strict=True):
            stripped = field_text.strip()
            if stripped in self.dialect.missing:
                continue
            kind = self.types[column]
            try:
                values[column] = cols.parse_value(field_text if kind == "string" else stripped, kind)
            except cols.BadValue:
                reason = "bad_label" if column == self.label else "bad_value"
                if column in self.widenable and cols.parses(stripped, "float"):
                    reason = DECIMAL_IN_INT
                return None, [], (reason, {"column": column, "value": field_text, "type": kind})
        if self.label not in values:
            return None, [], ("missing_label", {"column": self.label})
        if self.key is not None:
            if self.key not in values:
                return None, [], ("empty_key", {"column": self.key})
            if duplicate:
                return None, [], ("duplicate_key", {"column": self.key, "key": str(values[self.key])})
        return values, rows[0], None
