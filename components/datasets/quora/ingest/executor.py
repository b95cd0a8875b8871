"""The Quora Insincere Questions ingest executor: cuts the CSV into rows, validates, stratifies, writes Examples.

The driver finds the CSV and reads it once, streaming, to cut it into chunks of rows (byte
ranges), which needs one sequential pass: a quoted question may hold commas and newlines
(row_blocks.py finds the rows a block of lines at a time; `cut`, the workers' way, a line at a time). A
row whose quotes are still open when the next line starts like a new row (`<20 hex
digits>,`) or when the file ends has an unterminated quote: it is rejected and cutting
resumes at the next line. The driver also marks repeated qids (the first row with a qid
keeps it; components/ingest/repeats.py). The Beam pipeline (components/ingest/beam_ingest.py)
then cuts each chunk again in a worker, parses and validates its rows. Reasons, the first that applies:

    invalid:  unterminated_quote, undecodable (not UTF-8), bad_csv, wrong_field_count, duplicate_qid, empty_qid,
              bad_label, empty_text
    filtered: too_long (more than max_chars characters after stripping)

Split: stratified by label. Within each label, records are ordered by a hash of their
qid and the first round(n·w/W) go to the first split (names sorted), and so on: each
split's label ratio matches the whole to a record, and the assignment depends on
neither the file order nor the other records' labels.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import itertools
import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from tensorflow_metadata.proto.v0 import schema_pb2

from kflow.components.datasets.bundle import SPLIT_WITH_TEST
from kflow.components.datasets.quora.ingest.row_blocks import ROW_START, row_blocks
from kflow.components.ingest import ingest_records
from kflow.components.ingest.file_chunk import FileChunk as Chunk
from kflow.components.ingest.ingest_job import IngestJob
from kflow.components.ingest.ingest_records import FILTERED, INVALID, UNDECODABLE, make_reject, raw_text
from kflow.components.ingest.repeats import RepeatFinder
from kflow.components.ingest.source_resolution import find_source, missing_source_error
from kflow.components.ingest.split_plan import StratifiedPlan
from kflow.components.util.example_proto import example_of, feature_encoder

log = logging.getLogger(__name__)

FORMATS = ("auto", "csv", "kaggle")
HEADER = ["qid", "question_text", "target"]
FOLDERS = ("quora-insincere", "quora-insincere-questions-classification", "quora")
FILES = ("train.csv", "train_sample.csv")
KAGGLE_COMPETITION = "quora-insincere-questions-classification"
CHUNK_ROWS = 20_000  # Rows a chunk: each leaves a part file per shard to merge; fewer, larger ones merge faster.
_FEATURES = {"qid": schema_pb2.BYTES, "text": schema_pb2.BYTES, "label": schema_pb2.INT}


def run(*, max_chars: int = 1000, **parameters: Any) -> dict[str, Any]:
    """Ingests the Quora CSV (`parameters`: an IngestJob's); returns {"read": N, "<split>": n, ..., "rejected": r,
    "invalid": i, "filtered": f}. A CSV without the target column (the competition's test.csv: qid,question_text)
    is data to score: its questions go whole to the one split `split` names, without a label, keyed by qid."""
    job = IngestJob(**parameters)
    for name, value in (("max_chars", max_chars), ("max_records", job.max_records)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    path = resolve(job.source_path, job.source_format)
    labelled = labelled_header(path)
    if labelled:
        split = job.split_shares(SPLIT_WITH_TEST, ("train", "eval", "test"), "quora's CSV has no labelled test split")
        ingest_records.copy_schema("quora", job.schema, _FEATURES)
    else:
        split = dict(job.split or {})
        if len(split) != 1:
            raise ValueError(unlabelled_training(path))
        ingest_records.copy_scoring_schema("quora", job.schema, _FEATURES, key="qid")
    chunks, cut_rejects, read = scan(path, job.max_records)
    if read == 0:
        raise ValueError(f"quora: {path} holds no rows after its header")
    log.info("quora ingest: %d %s rows from %s", read, "labelled" if labelled else "unlabelled", path)
    return job.write(
        chunks=chunks,
        process_chunk=ChunkProcessor(max_chars, labelled),
        splits=tuple(split),
        read=read,
        plan=StratifiedPlan(dict(split)),
        extra_rejects=cut_rejects,
    )


def source_files(*, source_path: str | None = None, source_format: str = "auto", **_: Any) -> list[Path]:
    """The CSV the ingest reads, for the data fingerprint in its cache key."""
    return [resolve(source_path, source_format)]


def resolve(source_path: str | None, source_format: str) -> Path:
    """The CSV file: explicit path → $KFLOW_DATA_DIR → caches → Kaggle (source_format: kaggle only)."""
    if source_format not in FORMATS:
        raise ValueError(f"quora: source_format must be one of {', '.join(FORMATS)}; got {source_format!r}")
    if source_format == "kaggle":
        if source_path is not None:
            raise ValueError("quora: source_format 'kaggle' downloads the CSV; leave source_path unset")
        return _kaggle_download()
    found = find_source("quora", source_path, FOLDERS)
    if found is None:
        raise missing_source_error(
            "quora",
            FOLDERS,
            "the competition's train.csv (qid,question_text,target)",
            "set data.source.format=kaggle (needs Kaggle credentials and internet)",
        )
    if found.is_file():
        return found
    for name in FILES:
        if (found / name).is_file():
            return found / name
    raise ValueError(f"quora: {found} holds none of {', '.join(FILES)}")


def _kaggle_download() -> Path:
    try:
        import kagglehub

        return Path(kagglehub.competition_download(KAGGLE_COMPETITION, path="train.csv"))
    except Exception as error:  # noqa: BLE001 - kagglehub raises many kinds of errors; all mean "no download".
        raise ValueError(
            f"quora: downloading {KAGGLE_COMPETITION}/train.csv from Kaggle failed ({error}); configure Kaggle "
            f"credentials (~/.kaggle/kaggle.json or KAGGLE_USERNAME/KAGGLE_KEY) and accept the competition rules, "
            f"or download train.csv and set data.source.path to it"
        ) from error


def labelled_header(path: Path) -> bool:
    """Whether the CSV's header is the training file's (qid,question_text,target) rather than the test file's
    (qid,question_text); any other header is refused."""
    with path.open("rb") as file:
        header_line = file.readline()
    if not header_line:
        raise ValueError(f"quora: {path} is empty")
    header = header_line.decode("utf-8", errors="replace").lstrip("\ufeff").strip()
    found = next(csv.reader([header]), [])
    if found not in (HEADER, HEADER[:2]):
        raise ValueError(
            f"quora: {path} must start with the header {','.join(HEADER)} (or {','.join(HEADER[:2])}: questions to "
            f"score); found {header[:100]!r}"
        )
    return found == HEADER


def unlabelled_training(path: Path) -> str:
    return (
        f"quora: {path} has no target column ({','.join(HEADER[:2])}): questions to score, with kflow predict; "
        f"training needs the header {','.join(HEADER)}"
    )


def cut(lines: Iterable[bytes], first_line: int, offset: int) -> Iterator[tuple[int, int, bytes, bool]]:
    """The rows in `lines` (which start at line `first_line`, byte `offset`): (line, byte offset, raw row,
    unterminated). Blank lines are no rows; a row with open quotes takes the following lines until they close,
    the next line starts like a row, or the lines end."""
    lines = iter(lines)
    line, number = next(lines, None), first_line
    while line is not None:
        if not line.strip():
            offset, number, line = offset + len(line), number + 1, next(lines, None)
            continue
        start, start_offset, buffer, quotes = number, offset, line, line.count(b'"')
        offset, number, line = offset + len(line), number + 1, next(lines, None)
        while quotes % 2 and line is not None and not ROW_START.match(line):
            buffer += line
            quotes += line.count(b'"')
            offset, number, line = offset + len(line), number + 1, next(lines, None)
        yield start, start_offset, buffer, bool(quotes % 2)


def scan(path: Path, max_records: int | None = None) -> tuple[list[Chunk], list[dict], int]:
    """One streaming pass: the header checked, the rows counted and cut into chunks of CHUNK_ROWS, the rows with
    an unterminated quote (as rejects), and the rows that repeat an earlier qid (the first keeps it)."""
    chunks, found, read = [], [], 0
    qids = RepeatFinder()
    labelled_header(path)  # refuses an empty file and any other header
    with path.open("rb") as file:
        header_line = file.readline()
        first, count = None, 0  # The open chunk's first row (offset, line), and its rows so far.
        for block in row_blocks(file, 2, len(header_line)):
            rows = len(block.lines) if max_records is None else min(len(block.lines), max_records - read)
            for row in np.flatnonzero(block.unterminated[:rows]).tolist():
                position = f"{path.name}:{block.lines[row]}"
                found.append(make_reject("unterminated_quote", INVALID, position, raw_text(block.raw(row))))
            terminated = np.flatnonzero(~block.unterminated[:rows])
            starts = block.starts[terminated] - block.offset
            qids.add_slices(block.data, starts, block.key_stops(terminated), block.lines[terminated])
            row = 0
            while row < rows:  # A step per chunk boundary.
                if count == 0:
                    first = (int(block.starts[row]), int(block.lines[row]))
                taken = min(CHUNK_ROWS - count, rows - row)
                row, count = row + taken, count + taken
                if count == CHUNK_ROWS:
                    chunks.append(Chunk(str(path), first[0], int(block.ends[row - 1]), first[1], count))
                    count = 0
            read += rows
            if max_records is not None and read >= max_records:
                break
        if count:
            chunks.append(Chunk(str(path), first[0], None, first[1], count))
    next_lines = [chunk.first_line for chunk in chunks[1:]] + [float("inf")]
    ranges = [(chunk.first_line, next_line) for chunk, next_line in zip(chunks, next_lines, strict=True)]
    chunks = [
        dataclasses.replace(chunk, duplicate_lines=frozenset(inside))
        for chunk, inside in zip(chunks, qids.repeats_within(ranges), strict=True)
    ]
    return chunks, found, read


def _until(file, end: int) -> Iterator[bytes]:
    """The lines of `file` from its position up to byte `end`."""
    position = file.tell()
    for line in file:
        if position >= end:
            return
        position += len(line)
        yield line


# An Example's features in its order (label, qid, text: by name), each with its encoder chosen once.
_LABELS = {label: feature_encoder("label", "int64")(label) for label in (0, 1)}
_QID, _TEXT = feature_encoder("qid", "bytes"), feature_encoder("text", "bytes")


@dataclass(frozen=True)
class ChunkProcessor:
    """Cuts a chunk's rows out of the CSV, parses and validates them and serialises the valid ones as Examples."""

    max_chars: int
    labelled: bool = True  # False: questions to score (qid,question_text), written without a label

    def __call__(self, chunk: Chunk) -> tuple[list, list]:
        accepted, found = [], []
        name = Path(chunk.path).name
        with open(chunk.path, "rb") as file:
            file.seek(chunk.start)
            lines = file if chunk.end is None else _until(file, chunk.end)
            for line, _, raw, unterminated in itertools.islice(cut(lines, chunk.first_line, chunk.start), chunk.count):
                if unterminated:  # The driver's reject.
                    continue
                position = f"{name}:{line}"
                record, problem = self.parse(raw, line in chunk.duplicate_lines)
                if problem is not None:
                    reason, kind, details = problem
                    found.append(make_reject(reason, kind, position, raw_text(raw.rstrip(b"\r\n")), **details))
                    continue
                qid, text, label = record
                if label is None:
                    accepted.append((qid, "", example_of([_QID(qid), _TEXT(text)])))
                else:
                    accepted.append((qid, str(label), example_of([_LABELS[label], _QID(qid), _TEXT(text)])))
        return accepted, found

    def parse(self, raw: bytes, duplicate: bool) -> tuple[tuple[str, str, int | None] | None, tuple | None]:
        """(qid, text, label: None for a question to score) or the problem: (reason, kind, details)."""
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            return None, (UNDECODABLE, INVALID, {"error": str(error)})
        line = text.rstrip("\r\n")
        if line and '"' not in line and "\n" not in line and "\r" not in line:
            fields = [line.split(",")]  # What the CSV reader gives such a line, at a fifth of its cost.
        else:
            try:
                fields = list(csv.reader(io.StringIO(text)))
            except csv.Error as error:  # A bare carriage return in an unquoted field, for one.
                return None, ("bad_csv", INVALID, {"error": str(error)})
        if len(fields) != 1 or len(fields[0]) != len(HEADER) - (not self.labelled):
            return None, ("wrong_field_count", INVALID, {"fields": [len(row) for row in fields]})
        qid, question, *target = map(str.strip, fields[0])
        if duplicate:
            return None, ("duplicate_qid", INVALID, {"qid": qid})
        if not qid:
            return None, ("empty_qid", INVALID, {})
        if target and target[0] not in ("0", "1"):
            return None, ("bad_label", INVALID, {"label": target[0]})
        if not question:
            return None, ("empty_text", INVALID, {})
        if len(question) > self.max_chars:
            return None, ("too_long", FILTERED, {"chars": len(question), "max_chars": self.max_chars})
        return (qid, question, int(target[0]) if target else None), None
