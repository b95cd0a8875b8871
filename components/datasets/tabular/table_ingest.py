"""The executor skeleton of the tabular ingests (csv, parquet, tfrecord, tfds), a reader per format.

Each format's executor is `ingest_table(<its reader>, parameters)`. The reader (a `TableReader`: the label,
problem type and key, plus the format's own parameters) finds the source, its column types and its chunks,
and turns a chunk into Examples and rejects; the skeleton does the rest once: the source_format check, the
schema tagging the label (role=label, task=...), the refusal of an empty source, the shared Beam ingest
split by shares (stratified by label for classification) or by the reader's own splits, and the summary.
"""

from __future__ import annotations

import dataclasses
import logging
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from google.protobuf import text_format

from kflow.components.datasets.bundle import SPLIT_WITH_TEST
from kflow.components.datasets.tabular.examples import build_schema, row_names, scored_schema
from kflow.components.ingest import ingest_staging
from kflow.components.ingest.ingest_job import IngestJob
from kflow.components.ingest.split_plan import StratifiedPlan

log = logging.getLogger(__name__)

LABELLED_SPLITS = ("train", "eval", "test")


@dataclass(frozen=True)
class Table:
    """What a reader found: the source's `files`, the column `types`, the `label` and `problem_type` (inferred
    where the config left them out), the records `read` cut into `chunks`, what turns a chunk into Examples
    and rejects, and `splits`: {split: share} to divide the records by, or the names of the splits the
    reader assigns itself (tuple)."""

    files: Sequence[str]
    types: dict[str, str]
    label: str | None
    problem_type: str | None
    read: int
    chunks: Sequence[Any]
    process_chunk: Any
    splits: dict[str, int] | tuple[str, ...]
    numbered: str | None = None  # The first column when its values count the rows (SourceFacts.numbered).
    key: str | None = None  # The key the reader found in the data itself (a TFRecord's SOURCE_ROW), else the reader's


@dataclass(frozen=True)
class TableReader:
    """A format's reader and its parameters; subclasses add their own fields and implement `scan`."""

    dataset: ClassVar[str]
    formats: ClassVar[tuple[str, ...] | None] = None  # source_format besides "auto"; None: not checked
    empty: ClassVar[str] = ""  # What the "holds no records" error adds (csv: after their header).
    label: str | None = None  # None: data to score, each record keyed by its key or its position (SOURCE_ROW)
    problem_type: str | None = None
    key: str | None = None

    def shares(self, job: IngestJob) -> dict[str, int]:
        """`data.split`, the dataset's default when unset; without a label the data is to score (`kflow predict`):
        any split names, e.g. {score: 1}."""
        return job.split_shares(SPLIT_WITH_TEST, LABELLED_SPLITS if self.label is not None else ())

    def scan(self, job: IngestJob, staging: ingest_staging.Staging) -> Table:
        raise NotImplementedError

    def again(self, table: Table, stats: dict[str, Any], job: IngestJob) -> Table | None:
        """The table to read once more after a pass whose `stats` showed its types wrong (csv: a column of whole
        numbers in the sample holds decimals further on), else None."""
        return None

    def log_inferred(self, facts: Any) -> None:
        """Says in the log what the problem type was inferred to be, and why, when the config left it out, what the
        sample suggests setting (SourceFacts.notes), and how columns that are not what they look are read."""
        for note in facts.notes:
            log.warning("%s ingest: %s", self.dataset, note)
        for reading in facts.written_readings:  # how columns that are not what they look are read
            log.info("%s ingest: %s", self.dataset, reading)
        if facts.problem_type_reason:
            reason = facts.problem_type_reason
            hint = "" if "data.problem_type" in reason else " (set data.problem_type to choose)"  # said once
            log.info("%s ingest: data.problem_type not set: %s, as %s%s", self.dataset, facts.problem_type, reason,
                     hint)  # fmt: skip


def ingest_table(reader_class: type[TableReader], parameters: dict[str, Any]) -> dict[str, Any]:
    """Ingests a table: `parameters` are the ingest's (its outputs, its reader's and the IngestJob's); returns
    {"read": N, "<split>": n, ..., "rejected": r, "invalid": i, "filtered": f}."""
    own = {field.name for field in dataclasses.fields(reader_class)}
    reader = reader_class(**{name: value for name, value in parameters.items() if name in own})
    job = IngestJob(**{name: value for name, value in parameters.items() if name not in own})
    if reader.formats is not None:
        job.check_format(reader.dataset, *reader.formats)
    # The staged copies of gzipped files live until the pipeline has finished, where every worker reads them.
    with ingest_staging.Staging(job.beam_args) as staging:
        table: Table | None = reader.scan(job, staging)
        first = True
        while table is not None:
            write_schema(job, table, table.key or reader.key, say=first)  # read again (a column widened): said once
            first = False
            if table.read == 0:
                verb, empty = (
                    ("holds", reader.empty.replace("their", "its")) if len(table.files) == 1 else ("hold", reader.empty)
                )
                raise ValueError(f"{reader.dataset}: {', '.join(table.files)} {verb} no records{empty}")
            shares = table.splits if isinstance(table.splits, dict) else None
            stats = job.pipeline(
                chunks=table.chunks,
                process_chunk=table.process_chunk,
                splits=tuple(table.splits),
                read=table.read,
                plan=StratifiedPlan(dict(shares), stable=True) if shares is not None else None,
                staging=staging,
            )
            table = reader.again(table, stats, job)
            if table is not None:  # Read again from scratch: what the pass wrote goes.
                for folder in (job.examples.path, job.rejects.path):
                    shutil.rmtree(folder)
                    folder.mkdir(parents=True)
    return job.summary(stats)


def write_schema(job: IngestJob, table: Table, key: str | None, *, say: bool = True) -> None:
    """The Examples' schema: the label tagged with its task, or, for data to score, the key; `say`: log the column
    that names the rows."""
    names = row_names(table.types, table.numbered)
    if say and names is not None and names != table.label:
        log.info(
            "ingest: %r %s: %s, not a feature", names,
            "numbers the rows (0 or 1, 2, 3, … in the file's order)" if names == table.numbered
            else "holds the rows' names, as pandas or R write them beside the data",
            "the records' key" if key is None else f"kept beside the key {key!r}",
        )  # fmt: skip
    proto = (
        scored_schema(table.types, key, table.numbered)
        if table.label is None
        else build_schema(table.types, table.label, table.problem_type, key, table.numbered)
    )
    job.schema.path.mkdir(parents=True, exist_ok=True)
    job.schema.file.write_text(text_format.MessageToString(proto))
