"""The CSV ingest executor: any CSV files in, typed tf.train.Example TFRecords split three ways out.

The driver reads every file once, streaming (source.py, which cuts records with records.py): it
checks the headers, counts the records, samples the first `infer_rows` to infer the column
types that the config does not declare, marks repeated keys when a key column is declared,
and cuts the files into chunks of CHUNK_ROWS records (byte ranges; a gzipped file is first
decompressed, streaming, into the staging folder, so that it is cut like the others). The Beam
pipeline (components/ingest/beam_ingest.py) then parses each chunk in a worker. Reasons a record
is refused, the first that applies:

    filtered: missing_label (a record without a label: left out and counted, whatever their share), repeated_header
              (a record holding the header's names: files joined together, each with its header), footnote (a line
              below the last record with fewer fields than the header: a source, a note)
    invalid: unterminated_quote, undecodable (not in data.csv.encoding, UTF-8 unless set), bad_csv (JSON Lines:
             bad_json, a line that is no JSON object), wrong_field_count,
             bad_value (a value that does not parse as its column's type; the column is named),
             bad_label (regression: not a number), empty_key, duplicate_key

Split: classification is stratified by label, regression is not; within each group the records
are ordered by a hash of their key (the key column, else the record's content) and cut by
quota, so the assignment depends on neither the file order nor the other records.
"""

from __future__ import annotations

import csv
import functools
import itertools
import json
import logging
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from kflow.components.datasets.csv.ingest.dialect import Dialect
from kflow.components.datasets.csv.ingest.header import ENCODING_HINT, repeats_header
from kflow.components.datasets.csv.ingest.json_lines import FORMAT, dialect_of
from kflow.components.datasets.csv.ingest.readable import needs_copy, open_records
from kflow.components.datasets.csv.ingest.records import cut
from kflow.components.datasets.csv.ingest.source import resolve, scan_delimited, scan_files, source_facts
from kflow.components.datasets.csv.ingest.workbook import is_workbook, sheet_naming
from kflow.components.datasets.tabular import columns as cols
from kflow.components.datasets.tabular.columns import content_hash
from kflow.components.datasets.tabular.dataset import INFER_ROWS
from kflow.components.datasets.tabular.examples import SOURCE_ROW
from kflow.components.datasets.tabular.row_encoder import RowEncoder
from kflow.components.datasets.tabular.table_ingest import Table, TableReader, ingest_table
from kflow.components.ingest import ingest_staging
from kflow.components.ingest.compressed import open_source
from kflow.components.ingest.file_chunk import FileChunk as Chunk
from kflow.components.ingest.ingest_job import IngestJob
from kflow.components.ingest.ingest_records import (
    FOOTNOTE,
    INVALID,
    REPEATED_HEADER,
    UNDECODABLE,
    kind_of,
    make_reject,
    raw_text,
)
from kflow.components.util.example_proto import example_of, feature_encoder
from kflow.pipeline.dsl.artifacts import Rejects

log = logging.getLogger(__name__)


def run(**parameters: Any) -> dict[str, Any]:
    """Ingests the CSV files (`parameters`: the component's, and its outputs); returns {"read": N, "<split>": n,
    ..., "rejected": r, "invalid": i, "filtered": f}."""
    return ingest_table(CsvReader, parameters)


@dataclass(frozen=True)
class CsvReader(TableReader):
    dataset: ClassVar[str] = "csv"
    formats: ClassVar[tuple[str, ...]] = ("csv", FORMAT)
    empty: ClassVar[str] = " after their header"
    columns: dict[str, str] | None = None
    csv_format: dict[str, Any] | None = None
    infer_rows: int = INFER_ROWS

    def scan(self, job: IngestJob, staging: ingest_staging.Staging) -> Table:
        split = self.shares(job)
        files = resolve(job.source_path, job.source_format)
        copied = {index: path for index, path in enumerate(files) if needs_copy(path)}
        books = {index: path for index, path in copied.items() if is_workbook(path)}
        readable = {  # the workbooks' once their dialect names the sheet
            path: staging.plain_copy(path, f"source-{index:05d}.csv", open_records)
            for index, path in copied.items()
            if index not in books
        }
        dialect = dialect_of(files, job.source_format, self.csv_format, readable, job.max_records)
        named = cols.ColumnChoice(self.label, key=self.key, columns=self.columns).named
        if books and dialect.sheet is None:  # a cover sheet first: the sheet naming the config's columns
            dialect = replace(dialect, sheet=sheet_naming(next(iter(books.values())), named))
        sheet = functools.partial(open_records, sheet=dialect.sheet)
        readable |= {path: staging.plain_copy(path, f"source-{index:05d}.csv", sheet) for index, path in books.items()}
        sample = {"max_records": job.max_records, "sample": self.infer_rows, "readable": readable, "named": named}
        scan, dialect, read = scan_delimited(files, dialect, **sample)
        facts = source_facts(
            scan, dialect, self.label, self.problem_type, self.key, self.columns, job.max_invalid_fraction
        )
        facts = replace(facts, dialect=read)
        self.log_inferred(facts)
        if self.key is not None:  # A second pass only for the keys: most CSVs declare none.
            scan = scan_files(files, dialect, key=self.key, **sample)
        types, problem_type = facts.types, facts.problem_type
        inferred = {name: kind for name, kind in types.items() if name not in (self.columns or {})}
        typed = f"; inferred types {inferred}" if inferred else ""  # none when every column's type was given
        log.info("csv ingest: %d record(s) in %d %s file(s)%s", scan.read, len(files), dialect.name, typed)
        if scan.reordered:
            moved = ", ".join(scan.reordered[:5]) + (" …" if len(scan.reordered) > 5 else "")
            first = files[0].rsplit("/", 1)[-1]
            log.info("csv ingest: %s hold(s) the columns in another order than %s: read by their names", moved, first)
        widenable = frozenset(
            name
            for name, kind in inferred.items()
            if kind == "int" and (name != self.label or problem_type == "regression")
        )
        processor = ChunkProcessor(
            tuple(scan.header), types, dialect, self.label, problem_type, self.key, widenable, tuple(facts.written),
            tuple(facts.missing_marks.items()), scan.written_header,
        )  # fmt: skip
        return Table(files, types, self.label, problem_type, scan.read, scan.chunks, processor, split, facts.numbered)

    def again(self, table: Table, stats: dict[str, Any], job: IngestJob) -> Table | None:
        widened = decimals_in_int_columns(stats, job.rejects)
        if not widened:
            return None
        # Types come from a sample: a column of whole numbers there may hold decimals further on. Its values
        # are numbers, not errors: read everything again with the column as float (rare, so a second pass).
        log.info("csv ingest: %s", "; ".join(f"{name!r} holds decimals ({where})" for name, where in widened))
        log.info("csv ingest: reading again with %s as float", ", ".join(repr(name) for name, _ in widened))
        types = {**table.types, **{name: "float" for name, _ in widened}}
        processor = replace(
            table.process_chunk, types=types, widenable=table.process_chunk.widenable - {name for name, _ in widened}
        )
        return replace(table, types=types, process_chunk=processor)


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
class ChunkProcessor:
    """Parses and validates the records of a chunk and serialises the valid ones as Examples."""

    header: tuple[str, ...]
    types: dict[str, str]
    dialect: Dialect
    label: str | None  # None: data to score, each record keyed by its key column or its position (SOURCE_ROW)
    problem_type: str | None
    key: str | None
    widenable: frozenset[str] = frozenset()  # Inferred int columns: a decimal there is DECIMAL_IN_INT, not bad.
    written: tuple[str, ...] = ()  # Float columns of numbers as reports write them ($1,234.50, 12%).
    marks: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (column, marks also missing there: `?`) (missing_marks)
    written_header: tuple[str, ...] = ()  # the header's fields as written: a record holding them is REPEATED_HEADER

    @functools.cached_property
    def _encoder(self) -> RowEncoder:
        wanted, written = {self.label, self.key} - {None}, dict.fromkeys(self.written, self.dialect.number_style)
        marks, classes = dict(self.marks), [self.label] if self.label else []  # a label's yes/no words: yes_no.py
        return RowEncoder(self.header, self.types, self.dialect.missing, wanted, written, marks, classes)

    def __call__(self, chunk: Chunk) -> tuple[list, list]:
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
                if record.line in chunk.footnote_lines:
                    text = raw_text(record.raw.rstrip(b"\r\n"), self.dialect.encoding)
                    found.append(make_reject(FOOTNOTE, kind_of(FOOTNOTE), position, text))
                    continue
                if record.unterminated:
                    found.append(
                        make_reject(
                            "unterminated_quote",
                            INVALID,
                            position,
                            raw_text(record.raw.rstrip(b"\r\n"), self.dialect.encoding),
                        )
                    )
                    continue
                duplicate = record.line in chunk.duplicate_lines
                example, values, fields, problem = self.parse(record.raw, duplicate, chunk.columns)
                if problem is not None:
                    reason, details = problem
                    found.append(
                        make_reject(
                            reason,
                            kind_of(reason),
                            position,
                            raw_text(record.raw.rstrip(b"\r\n"), self.dialect.encoding),
                            **details,
                        )
                    )
                    continue
                key = str(values[self.key]) if self.key else f"{content_hash(fields)}|{position}"
                if self.label is None and self.key is None:
                    # A second `features` field merges into the first (protobuf): the record's FILE:LINE beside it.
                    example += example_of([feature_encoder(SOURCE_ROW, "bytes")(position)])
                group = str(values[self.label]) if self.problem_type == "classification" else "all"
                accepted.append((key, group, example))
        return accepted, found

    def parse(
        self, raw: bytes, duplicate: bool, columns: tuple[int, ...] | None = None
    ) -> tuple[bytes, dict[str, Any], list[str], tuple[str, dict] | None]:
        """The record's Example, the parsed values of its label and key, and its fields (in the header's order:
        `columns` says where each is in a file that holds them in another); or the problem: (reason, details)."""
        try:
            text = raw.decode(self.dialect.encoding).rstrip("\r\n").removeprefix("\ufeff")  # A BOM opens a file.
        except UnicodeDecodeError as error:
            return b"", {}, [], (UNDECODABLE, {"error": f"{error}: {ENCODING_HINT}"})
        try:
            rows = self.dialect.split(text)
        except csv.Error as error:  # JSON Lines' BadJson says its own reason
            return b"", {}, [], (getattr(error, "reason", "bad_csv"), {"error": str(error)})
        if len(rows) != 1 or len(rows[0]) != len(self.header):
            problem = ("wrong_field_count", {"expected": len(self.header), "found": [len(row) for row in rows]})
            return b"", {}, [], problem
        fields = [rows[0][at] for at in columns] if columns else rows[0]
        if repeats_header(fields, self.written_header):
            return b"", {}, fields, (REPEATED_HEADER, {})
        try:
            example, values = self._encoder(fields)
        except cols.BadValue:
            return b"", {}, fields, self._bad_value(fields)
        if self.label is not None and self.label not in values:
            return b"", {}, fields, ("missing_label", {"column": self.label})
        if self.key is not None:
            if self.key not in values:
                return b"", {}, fields, ("empty_key", {"column": self.key})
            if duplicate:
                return b"", {}, fields, ("duplicate_key", {"column": self.key, "key": str(values[self.key])})
        return example, values, fields, None

    def _bad_value(self, fields: list[str]) -> tuple[str, dict]:
        """Why the row encoder refused the record, and where: the first column in the header's order."""
        column = self._encoder.first_bad(fields)
        if column is None:
            raise AssertionError(f"csv: no field of {fields!r} is bad, yet the row encoder refused one")
        field_text, kind = fields[self.header.index(column)], self.types[column]
        reason = "bad_label" if column == self.label else "bad_value"
        if column in self.widenable and cols.parses(field_text.strip(), "float"):
            reason = DECIMAL_IN_INT
        return reason, {"column": column, "value": field_text, "type": kind}
