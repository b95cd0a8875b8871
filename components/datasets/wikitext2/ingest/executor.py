"""The WikiText-2 ingest executor: finds the corpus, filters its lines, writes them as TFRecord Examples.

The driver only finds the files and cuts each into chunks of CHUNK_LINES lines (byte
ranges), reading them once, streaming; with `deduplicate`, it also marks the lines that
repeat an earlier one (components/ingest/repeats.py: 16 bytes a line). The Beam pipeline of
components/ingest/beam_ingest.py then reads, decodes, filters and serialises each chunk in a
worker. Filters, in order, the first that applies being the line's reason:

    undecodable (not UTF-8: invalid) → blank → heading → too_short (< min_chars) → too_long (> max_chars) → duplicate

Lengths are counted in characters on the line as read, without its newline (the Keras
MLM guide keeps `len > 100`, hence min_chars=101); the text written is stripped.
Splits: the source's train/valid/test lines go to train/eval/test.

Text to score (`kflow predict`: `split` is the one split `score`): every line of a text file, of a folder's text files
(.txt, .text, .tokens, .raw) or of a glob pattern's files is one record, keyed `FILE:LINE`, whatever its length or
form (the training filters are a policy for what to learn from); only blank lines are left out, as `blank` rejects.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tensorflow_metadata.proto.v0 import schema_pb2

from kflow.components.ingest import ingest_records
from kflow.components.ingest.ingest_job import IngestJob
from kflow.components.ingest.ingest_records import FILTERED, INVALID, UNDECODABLE, make_reject, raw_text
from kflow.components.ingest.repeats import RepeatFinder
from kflow.components.ingest.source_resolution import find_source, missing_source_error
from kflow.components.util.example_proto import serialize_example

log = logging.getLogger(__name__)

FORMATS = ("auto", "download")
SPLITS = {"train": "train", "valid": "eval", "test": "test"}  # Source split → output split.
# The file names of each layout, by source split: the shared copy, the official tokenized zip, the raw zip.
LAYOUTS = (
    {"train": "train.txt", "valid": "valid.txt", "test": "test.txt"},
    {split: f"wiki.{split}.tokens" for split in SPLITS},
    {split: f"wiki.{split}.raw" for split in SPLITS},
)
# The usual folder names, including where keras.utils.get_file(extract=True) extracts the zip.
FOLDERS = ("wikitext-2", "wikitext-2-v1", "wikitext-2-raw", "wikitext-2-raw-v1", "wikitext-2-v1_extracted")
DOWNLOAD_URL = "https://s3.amazonaws.com/research.metamind.io/wikitext/wikitext-2-v1.zip"
CHUNK_LINES = 4000
_HEADING = re.compile(r"^\s*(=\s)+.*?(\s=)+\s*$")
_FEATURES = {"text": schema_pb2.BYTES, "key": schema_pb2.BYTES}
SCORE_PATTERNS = ("*.txt", "*.text", "*.tokens", "*.raw")


def run(
    *,
    min_chars: int = 101,
    max_chars: int | None = None,
    drop_headings: bool = True,
    drop_blank: bool = True,
    deduplicate: bool = False,
    **parameters: Any,
) -> dict[str, Any]:
    """Ingests WikiText-2 (`parameters`: an IngestJob's); returns {"read": N, "train": n, "eval": n, "test": n,
    "rejected": r, "filtered": f}."""
    job = IngestJob(**parameters)
    if scores_text(job.split):
        return _ingest_text_to_score(job)  # every line: repeats are scored too
    _check_split(job.split)
    for name, value in (("min_chars", min_chars), ("max_chars", max_chars), ("max_records", job.max_records)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
    if max_chars is not None and max_chars < min_chars:
        raise ValueError(f"max_chars ({max_chars}) is smaller than min_chars ({min_chars}): no line could pass")
    proto = ingest_records.copy_schema("wikitext2", job.schema, _FEATURES)
    filters = Filters(
        min_chars=max(min_chars, ingest_records.text_min_chars(proto, "text")),
        max_chars=max_chars,
        drop_headings=drop_headings,
        drop_blank=drop_blank,
    )

    files = resolve(job.source_path, job.source_format)
    chunks, read = plan_chunks(files.items(), job.max_records, deduplicate)
    if read == 0:
        raise ValueError(f"the WikiText-2 files {sorted(map(str, files.values()))} hold no lines")
    log.info("wikitext2 ingest: %d lines in %d chunks from %s", read, len(chunks), files["train"].parent)
    return job.write(chunks=chunks, process_chunk=ChunkProcessor(filters), splits=tuple(SPLITS.values()), read=read)


def _ingest_text_to_score(job: IngestJob) -> dict[str, Any]:
    """Every non-blank line of the text files at `source_path` into the one split `job.split` names, keyed FILE:LINE
    (FILE: its path under the folder given, or its name), without the training filters."""
    from kflow.components.datasets.tabular.table_files import table_files

    (split,) = job.split
    ingest_records.copy_scoring_schema("wikitext2", job.schema, _FEATURES, key="key")
    paths = [Path(name) for name in table_files("wikitext2", job.source_path, SCORE_PATTERNS, "text file")]
    root = Path(job.source_path).expanduser()
    names = [str(path.relative_to(root)) if root.is_dir() else path.name for path in paths]
    if len(set(names)) < len(names):  # a glob pattern's files of one name in several folders
        names = [str(path) for path in paths]
    chunks, read = plan_chunks([(split, path) for path in paths], job.max_records, False, names)
    if read == 0:
        raise ValueError(f"data: {job.source_path} holds no lines of text to score")
    log.info("wikitext2: %d lines to score from %d file(s)", read, len(paths))
    scoring = ChunkProcessor(Filters(min_chars=1, drop_headings=False), splits={split: split}, keyed_by_place=True)
    return job.write(chunks=chunks, process_chunk=scoring, splits=(split,), read=read)


def _check_split(split: dict[str, int] | None) -> None:
    if split is None:
        return
    unusable = sorted(set(split) - {"train", "eval"})
    if unusable:
        raise ValueError(
            f"data.split: wikitext2 uses the source's own train/valid/test files as train/eval/test, so it "
            f"cannot use the split(s) {unusable} (data.split.test is for datasets without a test split: quora)"
        )


def scores_text(split: dict[str, int] | None) -> bool:
    """Whether `split` asks for text to score: one split, none of the corpus's (kflow predict's `score`)."""
    return split is not None and len(split) == 1 and not set(split) & {"train", "eval", "test"}


def source_files(
    *, source_path: str | None = None, source_format: str = "auto", split: dict | None = None, **_: Any
) -> list[Path]:
    """The files the ingest reads, for the data fingerprint in its cache key."""
    if scores_text(split):
        from kflow.components.datasets.tabular.table_files import table_files

        return [Path(name) for name in table_files("wikitext2", source_path, SCORE_PATTERNS, "text file")]
    return sorted(resolve(source_path, source_format).values())


def resolve(source_path: str | None, source_format: str) -> dict[str, Path]:
    """The three files of the corpus, by source split: explicit path → $KFLOW_DATA_DIR → caches → download."""
    if source_format not in FORMATS:
        raise ValueError(f"wikitext2: source_format must be one of {', '.join(FORMATS)}; got {source_format!r}")
    folder = find_source("wikitext2", source_path, FOLDERS)
    if folder is None and source_format == "download":
        folder = _download()
    if folder is None:
        raise missing_source_error(
            "wikitext2",
            FOLDERS,
            "train.txt, valid.txt and test.txt (or the official wiki.{train,valid,test}.tokens)",
            "set data.source.format=download (needs internet)",
        )
    return find_files(folder)


def find_files(folder: Path) -> dict[str, Path]:
    """The three files of one layout in `folder` or in a wikitext-2*/ folder inside it."""
    if folder.is_file():
        raise ValueError(f"wikitext2: source_path {str(folder)!r} is a file; give the folder holding the three files")
    for candidate in (folder, *(folder / name for name in FOLDERS)):
        for layout in LAYOUTS:
            if all((candidate / name).is_file() for name in layout.values()):
                return {split: candidate / name for split, name in layout.items()}
    expected = " or ".join("/".join(layout.values()) for layout in LAYOUTS)
    raise ValueError(f"wikitext2: {folder} does not hold the WikiText-2 files ({expected})")


def _download() -> Path:
    import keras

    archive = keras.utils.get_file("wikitext-2-v1.zip", DOWNLOAD_URL, extract=True)
    return Path(archive).parent if Path(archive).is_file() else Path(archive)


@dataclass(frozen=True)
class Chunk:
    path: str
    source_split: str
    start: int  # Byte offsets of the chunk's lines in the file.
    stop: int
    first_line: int  # 1-based number of the chunk's first line.
    duplicates: frozenset[int] = frozenset()  # Line numbers that repeat an earlier line.
    name: str = ""  # The file as rejects and keys name it (its name when empty).


def plan_chunks(
    files: Iterable[tuple[str, Path]], max_records: int | None, deduplicate: bool, names: Sequence[str] = ()
) -> tuple[list[Chunk], int]:
    """Cuts each (source split, file) into chunks of CHUNK_LINES lines, streaming; returns them and the number of
    lines read. `names`: how each file is named in rejects and keys (default: its file name)."""
    planned, read, repeats = [], 0, RepeatFinder()
    for index, (source_split, path) in enumerate(files):
        name = names[index] if index < len(names) else path.name
        base, offset, first, block_start, count = read, 0, 1, 0, 0
        with path.open("rb") as file:
            for line in file:  # Each line with its newline; the file's last line may have none.
                if max_records is not None and count >= max_records:
                    break
                count += 1
                if deduplicate:
                    repeats.add(line.removesuffix(b"\n"), base + count)
                offset += len(line)
                if count % CHUNK_LINES == 0:
                    planned.append((Chunk(str(path), source_split, block_start, offset, first, name=name), base))
                    first, block_start = count + 1, offset
        if count >= first:
            planned.append((Chunk(str(path), source_split, block_start, offset, first, name=name), base))
        read += count
    # Repeats are numbered across the files (base + line), so a line repeating another file's counts too.
    ranges = [(base + chunk.first_line, base + chunk.first_line + CHUNK_LINES) for chunk, base in planned]
    chunks = [
        dataclasses.replace(chunk, duplicates=frozenset(order - base for order in inside))
        for (chunk, base), inside in zip(planned, repeats.repeats_within(ranges), strict=True)
    ]
    return chunks, read


@dataclass(frozen=True)
class Filters:
    min_chars: int = 101
    max_chars: int | None = None
    drop_headings: bool = True
    drop_blank: bool = True

    def reason(self, line: str) -> str | None:
        """The policy reason to drop a decoded line, or None to keep it."""
        stripped = line.strip()
        if not stripped:
            return "blank" if self.drop_blank else "empty"  # An empty text is never written (schema min_chars=1).
        if self.drop_headings and stripped[0] == "=" and _HEADING.match(line):
            return "heading"
        if len(line) < self.min_chars:
            return "too_short"
        if self.max_chars is not None and len(line) > self.max_chars:
            return "too_long"
        return None


class ChunkProcessor:
    """Reads a chunk's lines, filters them and serialises the kept ones as Examples: into the split `splits` maps
    the chunk's source split to, keyed `<source split>-<line>` (or `FILE:LINE`, `keyed_by_place`)."""

    def __init__(self, filters: Filters, splits: dict[str, str] = SPLITS, keyed_by_place: bool = False):
        self.filters, self.splits, self.keyed_by_place = filters, dict(splits), keyed_by_place

    def __call__(self, chunk: Chunk) -> tuple[list, list]:
        with open(chunk.path, "rb") as file:
            file.seek(chunk.start)
            data = file.read(chunk.stop - chunk.start)
        lines = data.split(b"\n")[: data.count(b"\n")] if data.endswith(b"\n") else data.split(b"\n")
        name = chunk.name or Path(chunk.path).name
        group = self.splits[chunk.source_split]
        reason_of, duplicates = self.filters.reason, chunk.duplicates
        accepted, found = [], []
        for number, raw in enumerate(lines, chunk.first_line):
            try:
                line = raw.removesuffix(b"\r").decode("utf-8")
            except UnicodeDecodeError as error:
                raw = raw.removesuffix(b"\r")
                found.append(make_reject(UNDECODABLE, INVALID, f"{name}:{number}", raw_text(raw), error=str(error)))
                continue
            reason = reason_of(line)
            if reason is None and number in duplicates:
                reason = "duplicate"
            if reason is not None:
                found.append(make_reject(reason, FILTERED, f"{name}:{number}", line, chars=len(line)))
                continue
            key = f"{name}:{number}" if self.keyed_by_place else f"{chunk.source_split}-{number:07d}"
            accepted.append((key, group, serialize_example({"text": line.strip(), "key": key})))
        return accepted, found
