"""The Parquet ingest executor: Parquet files in, typed tf.train.Example TFRecords split three ways out.

The driver reads only the files' footers (schemas, row-group sizes), a sample of the label (to infer the
task when it is not given) and, when a key column is declared, that column (to find repeated keys). Each row
group is one Beam element: a worker reads it (only the columns it needs), checks and converts each row and
serialises the valid ones, as the CSV ingest does. Reasons a record is refused (position `file#row`):

    filtered: missing_label (a row without a label: left out and counted, whatever their share)
    invalid: bad_value (a value that does not convert to its column's declared type, or a non-finite number),
             bad_label (regression: not a number), empty_key, duplicate_key

Split: as for csv (stratified by label for classification; ordered by a hash of the key column, else of the
record's values written as text as pandas writes a CSV, so a Parquet copy of a CSV splits the same way).
"""

from __future__ import annotations

import dataclasses
import datetime
import logging
import math
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from kflow.components.datasets.parquet.ingest.source import (
    RowGroup,
    as_text,
    inspect_source,
    open_file,
    partitions,
    resolve,
)
from kflow.components.datasets.tabular import columns as cols
from kflow.components.datasets.tabular.columns import content_hash, serialized_example
from kflow.components.datasets.tabular.dataset import INFER_ROWS
from kflow.components.datasets.tabular.examples import SOURCE_ROW
from kflow.components.datasets.tabular.table_ingest import Table, TableReader, ingest_table
from kflow.components.datasets.tabular.yes_no import class_name
from kflow.components.ingest.ingest_job import IngestJob
from kflow.components.ingest.ingest_records import kind_of, make_reject
from kflow.components.ingest.repeats import RepeatFinder

log = logging.getLogger(__name__)


def run(**parameters: Any) -> dict[str, Any]:
    """Ingests the Parquet files (`parameters`: the component's, and its outputs); returns {"read": N, "<split>": n,
    ..., "rejected": r, "invalid": i, ...}."""
    return ingest_table(ParquetReader, parameters)


@dataclass(frozen=True)
class ParquetReader(TableReader):
    dataset: ClassVar[str] = "parquet"
    formats: ClassVar[tuple[str, ...]] = ("parquet",)
    columns: dict[str, str] | None = None
    infer_rows: int = INFER_ROWS

    def scan(self, job: IngestJob, staging: Any) -> Table:
        split = self.shares(job)
        facts = inspect_source(source_path=job.source_path, **dataclasses.asdict(self))
        self.log_inferred(facts)
        files = resolve(job.source_path)
        groups, read = row_groups(files, self.key, job.max_records, partitions(files, job.source_path))
        log.info("parquet ingest: %d records in %d row group(s) of %d file(s)", read, len(groups), len(files))
        processor = RowGroupProcessor(tuple(facts.header), facts.types, self.label, facts.problem_type, self.key)
        return Table(files, facts.types, self.label, facts.problem_type, read, groups, processor, split, facts.numbered)


def row_groups(
    files: list[str], key: str | None, max_records: int | None, partitioned: dict | None = None
) -> tuple[list[RowGroup], int]:
    """The row groups to read (the last one cut short at `max_records`), and the number of records in them;
    with a key column, each group's rows whose key an earlier row has; each with its file's partition folders'
    values (`partitioned`: source.partitions)."""
    groups: list[RowGroup] = []
    read = 0
    keys = RepeatFinder() if key is not None else None
    for path in files:
        parquet = open_file(path)
        first_row = 0
        for index in range(parquet.num_row_groups):
            count = parquet.metadata.row_group(index).num_rows
            if max_records is not None:
                count = min(count, max_records - read)
            if count <= 0:
                break
            if keys is not None:
                values = parquet.read_row_group(index, columns=[key]).column(0).to_pylist()[:count]
                for offset, value in enumerate(values):
                    if (text := as_text(value)) != "":
                        keys.add(text.encode(), read + offset)
            partition = tuple((partitioned or {}).get(path, {}).items())
            groups.append(RowGroup(path, index, first_row, count, partition=partition))
            read += count
            first_row += count
    if keys is not None:
        starts = list(_starts(groups))
        ranges = [(start, start + group.count) for group, start in zip(groups, starts, strict=True)]
        groups = [
            replace(group, duplicate_rows=frozenset(group.first_row + ordinal - start for ordinal in repeated))
            for group, start, repeated in zip(groups, starts, keys.repeats_within(ranges), strict=True)
        ]
    return groups, read


def _starts(groups: list[RowGroup]):
    start = 0
    for group in groups:
        yield start
        start += group.count


@dataclass(frozen=True)
class RowGroupProcessor:
    """Reads a row group, checks and converts its rows, and serialises the valid ones as Examples."""

    header: tuple[str, ...]
    types: dict[str, str]
    label: str | None  # None: data to score, each record keyed by its key column or its position (SOURCE_ROW)
    problem_type: str | None
    key: str | None

    def __call__(self, group: RowGroup) -> tuple[list, list]:
        folders = dict(group.partition)  # a partition folder's column: its value in every row of the file
        read = [name for name in self.header if name not in folders]
        table = open_file(group.path).read_row_group(group.index, columns=read)
        data = [
            [folders[name]] * group.count if name in folders else table.column(name).to_pylist()[: group.count]
            for name in self.header
        ]
        accepted, found = [], []
        for offset in range(group.count):
            row = group.first_row + offset
            position = f"{group.display_name}#{row}"
            raw = [column[offset] for column in data]
            values, problem = self.convert(raw, row in group.duplicate_rows)
            if problem is not None:
                reason, details = problem
                record = {name: as_text(value) for name, value in zip(self.header, raw, strict=True)}
                found.append(make_reject(reason, kind_of(reason), position, record, **details))
                continue
            identity = str(values[self.key]) if self.key else f"{content_hash([as_text(v) for v in raw])}|{position}"
            group_name = str(values[self.label]) if self.problem_type == "classification" else "all"
            if self.label is None and self.key is None:
                values[SOURCE_ROW] = position
            accepted.append((identity, group_name, serialized_example(values)))
        return accepted, found

    def convert(self, raw: list[Any], duplicate: bool) -> tuple[dict[str, Any], tuple[str, dict] | None]:
        """{column: value} of the present values, or the problem: (reason, details)."""
        values: dict[str, Any] = {}
        for column, value in zip(self.header, raw, strict=True):
            if value is None or (isinstance(value, float) and math.isnan(value)):
                continue
            kind = self.types[column]
            try:
                values[column] = to_kind(value, kind)
            except cols.BadValue:
                reason = "bad_label" if column == self.label else "bad_value"
                return {}, (reason, {"column": column, "value": as_text(value), "type": kind})
        for column in (self.label, self.key):  # ` yes` is the class `yes`, as the CSV ingest reads it
            if isinstance(values.get(column), str):
                values[column] = values[column].strip()
                if not values[column]:
                    del values[column]
                elif column == self.label:  # a yes/no word as its class's one spelling (yes_no.py)
                    values[column] = class_name(values[column])
        if self.label is not None and self.label not in values:
            return {}, ("missing_label", {"column": self.label})
        if self.key is not None:
            if self.key not in values:
                return {}, ("empty_key", {"column": self.key})
            if duplicate:
                return {}, ("duplicate_key", {"column": self.key, "key": str(values[self.key])})
        return values, None


def to_kind(value: Any, kind: str) -> int | float | str:
    """A Parquet value as kflow's `kind`: its own type's value, or its text parsed as `kind` (a declared
    conversion); cols.BadValue when it does not convert, or is not a finite number."""
    if kind == "string":
        return value if isinstance(value, str) else as_text(value)
    if isinstance(value, bool):
        if kind == "float":
            raise cols.BadValue(value)
        return int(value)
    if kind == "int" and isinstance(value, int):
        return cols.int64(value)
    if isinstance(value, datetime.timedelta) and kind in ("float", "int"):  # a duration: its seconds
        value = value.total_seconds()
    if kind == "float" and not isinstance(value, str) and hasattr(value, "__float__"):
        number = float(value)
        if not math.isfinite(number):
            raise cols.BadValue(value)
        return number
    return cols.parse_value(as_text(value), kind)
