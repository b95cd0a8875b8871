"""Reading a CSV source without parsing it all: its files, its dialect, one streaming scan that cuts it into
chunks, and what a sample of it says (the columns' types, the task) — the csv ingest's driver and `kflow
validate` share these checks.

The driver reads every file once (records.py cuts the records): it checks the headers, counts the records,
samples the first `infer_rows` to infer the column types the config does not declare, marks repeated keys
when a key column is declared, and cuts the files into chunks of CHUNK_ROWS records (byte ranges).
"""

from __future__ import annotations

from array import array
from collections import deque
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kflow.components.datasets.csv.ingest.decimal_mark import comma_columns, with_point
from kflow.components.datasets.csv.ingest.dialect import Dialect
from kflow.components.datasets.csv.ingest.footnotes import FOOTNOTE_LINES, footnotes
from kflow.components.datasets.csv.ingest.header import (
    ENCODING_HINT,
    HeaderNotDecoded,
    decodes,
    read_header,
    repeats_header,
    split_row,
)
from kflow.components.datasets.csv.ingest.header_checks import (
    check_declared,
    check_delimiter,
    check_fields,
    check_headers,
    cutting_delimiter,
    decimal_commas,
    fields_delimiter,
    file_columns,
    label_marks,
    named_columns,
    word_marks,
)
from kflow.components.datasets.csv.ingest.json_array import is_json_array
from kflow.components.datasets.csv.ingest.json_lines import FORMAT, JSON_PATTERNS, PATTERNS, dialect_of
from kflow.components.datasets.csv.ingest.key_column import code_columns, repeated
from kflow.components.datasets.csv.ingest.readable import needs_copy, open_records
from kflow.components.datasets.csv.ingest.records import cut
from kflow.components.datasets.csv.ingest.workbook import PATTERNS as WORKBOOK_PATTERNS
from kflow.components.datasets.csv.ingest.workbook import is_workbook, sheet_naming, sheet_read
from kflow.components.datasets.tabular import columns as cols
from kflow.components.datasets.tabular import written_numbers, yes_no
from kflow.components.datasets.tabular.columns import SourceFacts
from kflow.components.datasets.tabular.examples import row_names
from kflow.components.datasets.tabular.missing_marks import marked_columns, numbers_marked
from kflow.components.datasets.tabular.table_files import TAR_MARK, other_format, table_files
from kflow.components.ingest.compressed import SUFFIXES, open_source
from kflow.components.ingest.file_chunk import FileChunk as Chunk
from kflow.components.ingest.repeats import RepeatFinder

CHUNK_ROWS = 20_000  # Rows a chunk: each leaves a part file per shard to merge; fewer, larger ones merge faster.


def source_facts(
    scan: Scan,
    dialect: Dialect,
    label: Any,
    problem_type: str | None,
    key: str | None,
    columns: dict[str, str] | None,
    max_invalid_fraction: float = 0.01,
) -> SourceFacts:
    """The checks of the header, the declared columns and the task that the ingest and `kflow validate` share; those
    of the sampled records (most of them of another field count, or not of a declared type) where
    `max_invalid_fraction` does not allow most records to be invalid."""
    check_delimiter(scan.header, dialect, label)
    strict = max_invalid_fraction < 0.5
    if strict:
        check_fields(scan, dialect)
    declared = columns or {}
    # A mark standing for a missing number (`?`) is missing there; for the inference, anywhere (it checks no text).
    gaps = marked_columns(scan.header, scan.sample, declared, dialect.missing, dialect.number_style)
    missing = dialect.missing.union(*gaps.values())
    types = cols.infer_types(scan.header, scan.sample, declared, missing)
    # Numbers as reports write them ($1,234.50, 12%) are read as numbers (written_numbers.py).
    # A column declared int (kflow predict's, typed as in training) reads them too where they are whole (1,375).
    undeclared = {
        name: kind
        for name, kind in types.items()
        if declared.get(name) == "int" or (declared.get(name, "float") == "float" and kind != "int")
    }
    marks = written_numbers.decorated(scan.header, scan.sample, undeclared, missing, dialect.number_style)
    types |= {name: "float" for name in marks if declared.get(name) != "int"}
    codes = code_columns(scan, types, {*declared, *marks}, label, key, missing)  # 02134: text, the zeros kept
    types |= dict.fromkeys(codes, "string")
    if strict:
        check_declared(scan, declared, missing, marks)
    at = scan.header.index(label) if isinstance(label, str) and label in scan.header else None
    values = [row[at].strip() for row in scan.sample if at is not None and len(row) == len(scan.header)]
    values = [value for value in values if value not in (missing if label in gaps else dialect.missing)]
    if types.get(label) == "bool" and label not in declared and yes_no.words_of_one_pair(values):
        # A yes/no label's classes are its words (no, yes), not 0 and 1, in one spelling whatever their case (No, YES):
        # the same classes in every file and span (yes_no.py). With a 1 or a 0 among them it stays a bool.
        types[label] = "string"
    if types.get(label) == "string":
        values = [yes_no.class_name(value) for value in values]
    if label in marks:  # the numbers they write, for the task's inference
        numbers = (written_numbers.plain(value, dialect.number_style) for value in values)
        values = [repr(number) for number in numbers if number is not None]
    first = []
    if types.get(scan.header[0]) == "int":  # a short row whose first field is no number is a note (`footnotes`)
        full = len(scan.header)
        first = [row[0] for row in scan.sample if row and (len(row) == full or cols.parses(row[0].strip(), "int"))]
    facts = cols.table_facts(scan.header, types, label, problem_type, key, declared, values, first)
    gaps = numbers_marked(scan.header, scan.sample, types, missing - dialect.missing)
    notes = decimal_commas(scan, dialect, types) + label_marks(label, values, facts.problem_type)
    notes += word_marks(scan, types, missing, {*declared, label, key})
    return replace(
        facts, sampled=len(scan.sample), notes=notes, written=marks, missing_marks=gaps, renamed=scan.renamed,
        empty=_empty(scan, missing, {label, key}), preambles=tuple(scan.preambles), codes=codes,
        repeated_keys=repeated(scan, key, dialect.missing),
    )  # fmt: skip


def _empty(scan: Scan, missing: frozenset[str], named: set) -> tuple[str, ...]:
    """The columns (but the label and key) with no value in the sample's rows."""
    rows = [row for row in scan.sample if len(row) == len(scan.header)]
    if not rows:
        return ()
    return tuple(
        name
        for at, name in enumerate(scan.header)
        if name not in named and all(row[at].strip() in missing for row in rows)
    )


def scan_delimited(files: list[str], dialect: Dialect, **sample: Any) -> tuple[Scan, Dialect, tuple[str, ...]]:
    """`scan_files`, with what the config leaves out of the dialect read from the files: the encoding (UTF-8, else
    cp1252: `_scan_encoded`), the delimiter that cuts a header read as one column into columns holding every column
    the config names (`sample["named"]`: the label, the key, the declared ones; kflow predict's, the model's
    inputs), else one that cuts the header as it cuts the records whatever the config names (fields_delimiter), when
    there is one (a tab-separated file, Excel's "Unicode Text", a `;` file given ','), and the decimal mark
    (decimal_mark.py). (The scan, the dialect it was read with, what was read so, for the log.)"""
    if dialect.sheet is None and (books := [path for path in files if is_workbook(path)]):
        dialect = replace(dialect, sheet=sheet_naming(books[0], sample.get("named") or frozenset()))
    scan, dialect, readings = _scan_encoded(files, dialect, sample)
    if books := [path for path in files if is_workbook(path)]:
        readings.insert(0, sheet_read(books[0], dialect.sheet))
    if not dialect.delimited:
        layout = "a JSON array of objects, an element a record" if any(map(is_json_array, files)) else None
        layout = layout or f"{dialect.name}, an object a line"
        readings.insert(0, f"{layout}: its {len(scan.header)} keys are the columns")
    for file, lines in scan.footnotes:
        readings.append(f"{file} ends in {lines} line(s) of notes below the table (a source, a note): left out")
    if scan.repeated:
        readings.append(
            f"{scan.repeated} sampled record(s) repeat the header (files joined together): left out and counted "
            "(repeated_header), not read as data"
        )
    named = sample.get("named") or frozenset()
    mark = cutting_delimiter(scan.header, dialect, named) or fields_delimiter(scan, dialect)
    if mark is not None:
        dialect = replace(dialect, delimiter=mark)
        scan = scan_files(files, dialect, key=None, **sample)
        readings.append(
            f"the header's names are separated by {mark!r}: read so (set data.csv.delimiter to read it otherwise)"
        )
    if dialect.decimal is None:
        commas = (
            comma_columns(scan.header, scan.sample, dialect.missing, dialect.delimiter)
            if dialect.delimiter != ","
            else []
        )
        dialect = replace(dialect, decimal="," if commas else ".")
        if commas:
            scan = replace(scan, sample=[[with_point(value) for value in row] for row in scan.sample])
            readings.append(
                f"{named_columns(commas)} numbers written with a decimal comma (14,23): the file's numbers read so "
                "(data.csv.decimal: '.' reads them as text)"
            )
    return scan, dialect, tuple(readings)


# What Excel saves a CSV in on Windows in Western Europe and the Americas: read where a file is not UTF-8.
WINDOWS_ENCODING = "cp1252"


def _scan_encoded(files: list[str], dialect: Dialect, sample: dict[str, Any]) -> tuple[Scan, Dialect, list[str]]:
    """`scan_files` in the config's encoding, or, left out, in UTF-8, unless the header or sampled records are not
    UTF-8 and all of them are cp1252 (a header in UTF-8 with other letters than ASCII's says UTF-8 whatever rows
    follow: a file of two encodings is refused or its rows rejected, as before)."""
    if dialect.encoding is not None:
        return scan_files(files, dialect, key=None, **sample), dialect, []
    utf8, windows = replace(dialect, encoding="utf-8"), replace(dialect, encoding=WINDOWS_ENCODING)
    failure = None
    try:
        scan = scan_files(files, utf8, key=None, **sample)
        if not scan.undecodable or not all(name.isascii() for name in scan.header):
            return scan, utf8, []
    except HeaderNotDecoded as error:
        scan, failure = None, error
    try:
        other = scan_files(files, windows, key=None, **sample)
    except HeaderNotDecoded:
        other = None
    if other is not None and not other.undecodable:
        said = f"the file is not UTF-8 but {WINDOWS_ENCODING} (Windows' Western European): read so"
        said += " (set data.csv.encoding to read it otherwise)"
        return other, windows, [said]
    if failure is not None:  # neither reads the header: UTF-8's one line
        raise failure
    return scan, utf8, []


def inspect_source(
    *, source_path: str | None = None, csv_format: dict[str, Any] | None = None, **parameters: Any
) -> SourceFacts:
    """The source's facts from its first file's header and first `infer_rows` records (`kflow validate`; the
    other `parameters` are the ingest's, read as a ColumnChoice): raises the ValueError the ingest would, naming
    the field."""
    choice = cols.ColumnChoice.of(parameters)
    source_format = parameters.get("source_format", "auto")
    files = resolve(source_path, source_format)
    sample = choice.infer_rows
    dialect = dialect_of(files, source_format, csv_format, {}, sample)
    if not dialect.delimited and not choice.named <= set(dialect.header or ()):  # named by a line past the sample?
        dialect = dialect_of(files, source_format, csv_format, {}, None)
    scan, dialect, read = scan_delimited(files[:1], dialect, max_records=sample, sample=sample, named=choice.named)
    if dialect.delimited:
        check_headers(files, dialect, scan.header, choice.named)
    allowed = parameters.get("max_invalid_fraction", 0.01)
    if scan.undecodable and scan.undecodable > allowed * scan.read:
        # The ingest would refuse these records as invalid; their share of the sample already passes its limit.
        raise ValueError(
            f"data.csv.encoding: {scan.undecodable} of the first {scan.read} records are not {dialect.encoding} "
            f"(the first at {scan.first_undecodable}), more than data.filters.max_invalid_fraction={allowed:g} allows: "
            f"{ENCODING_HINT}"
        )
    facts = replace(
        source_facts(scan, dialect, choice.label, choice.problem_type, choice.key, choice.columns, allowed),
        dialect=read,
    )
    if scan.read < sample:  # the whole file was read: its empty columns are empty in every split
        _check_values(facts, choice.label, choice.key)
    return facts


def _check_values(facts: SourceFacts, label: Any, key: str | None) -> None:
    """Refuses what the Transform would: a table whose every column to learn from has no value."""
    names = row_names(dict.fromkeys(facts.header), facts.numbered)
    features = [name for name in facts.header if name not in (label, key, names)]
    if isinstance(label, str) and features and set(features) <= set(facts.empty):
        shown = ", ".join(map(repr, features[:4])) + (", …" if len(features) > 4 else "")
        raise ValueError(f"data.source.path: no column to learn {label!r} from has a value ({shown}: all empty)")


def source_files(*, source_path: str | None = None, source_format: str = "auto", **_: Any) -> list[Path]:
    """The files the ingest reads, for the data fingerprint in its cache key."""
    return [Path(path) for path in resolve(source_path, source_format)]


# A folder's CSV files, compressed as open_source reads them too (a file alone or a glob was read so; a folder of
# .csv.bz2 files "matched no CSV").
CSV_PATTERNS = tuple(f"*.csv{suffix}" for suffix in SUFFIXES)
TSV_PATTERNS = tuple(f"*.tsv{suffix}" for suffix in SUFFIXES)  # a folder of them, where it holds no CSV


def resolve(source_path: str | None, source_format: str = "auto") -> list[str]:
    """The files to read: a file, a glob pattern, or a folder's CSV files (CSV_PATTERNS), else its JSON Lines files
    (PATTERNS), else its Excel workbooks (WORKBOOK_PATTERNS), else its JSON files (JSON_PATTERNS: arrays of records);
    for source_format jsonl, its JSON files alone (a `metadata.jsonl` beside CSVs is not data), sorted by name."""
    folder = Path(source_path).expanduser() if source_path else None
    patterns = PATTERNS if source_format == FORMAT else CSV_PATTERNS
    if source_format != "csv" and folder is not None and folder.is_dir():
        kinds = (CSV_PATTERNS, PATTERNS, TSV_PATTERNS, WORKBOOK_PATTERNS, JSON_PATTERNS)  # a .json beside: metadata
        kinds = kinds if source_format == "auto" else (PATTERNS, JSON_PATTERNS)
        patterns = next((kind for kind in kinds if _holds(folder, kind)), patterns)
    files = table_files("csv", source_path, patterns, "CSV, JSON Lines, JSON or Excel file")
    if folder is not None and folder.is_dir():  # train.csv beside train.csv.zip (a download unzipped in place): once
        names = {Path(name).name for name in files}
        files = [name for name in files if not _compressed_copy(Path(name).name, names)]
    return files


def _compressed_copy(name: str, names: set[str]) -> bool:
    """Whether `name` is a compressed copy of another file of the folder (`x.csv.gz` beside `x.csv`)."""
    stem, _, suffix = name.rpartition(".")
    return bool(stem) and f".{suffix}" in SUFFIXES and stem in names


def _holds(folder: Path, patterns: tuple[str, ...]) -> bool:
    return any(name for pattern in patterns for name in folder.glob(pattern))


@dataclass
class Scan:
    header: list[str] = field(default_factory=list)
    read: int = 0
    chunks: list[Chunk] = field(default_factory=list)
    sample: list[list[str]] = field(default_factory=list)
    undecodable: int = 0  # records of the sample not in the dialect's encoding
    renamed: dict[str, str] = field(default_factory=dict)  # {name given: name written} (header.column_names)
    preambles: list[tuple[str, int]] = field(default_factory=list)  # (file, lines above its header)
    first_undecodable: str | None = None  # FILE:LINE of the first
    written_header: tuple[str, ...] = ()  # the header's fields as written, stripped (header.Header.written)
    footnotes: list[tuple[str, int]] = field(default_factory=list)  # (file, its lines of notes below the table)
    repeated: int = 0  # records read for the sample that repeat the header (files joined together): left out of it
    reordered: list[str] = field(default_factory=list)  # files holding the first one's columns in another order


def scan_files(
    files: list[str],
    dialect: Dialect,
    *,
    key: str | None,
    max_records: int | None,
    sample: int,
    readable: dict[str, str] | None = None,
    named: frozenset[str] = frozenset(),
) -> Scan:
    """One streaming pass over the files: header, record count, chunks, a sample of rows, repeated keys (found
    with 24 bytes a record: `components/ingest/repeats.py`).

    `readable`: a file's decompressed copy, to read and cut instead of the compressed file (which cannot be
    cut: a chunk would have to decompress everything before it). `named`: the columns the config names, which
    find a header below a preamble (header.read_header)."""
    scan = Scan()
    keys = RepeatFinder() if key is not None else None
    lines, chunk_starts = array("q"), []  # Each record's line in its file; each chunk's first record.
    for path in files:
        if max_records is not None and scan.read >= max_records:
            break
        source = (readable or {}).get(path, path)
        splittable = not needs_copy(source)
        if not is_workbook(path):  # a workbook is a ZIP, which open_source refuses: read as its sheet's CSV
            with open_source(path) as start:  # the first bytes, not the first line: a format's magic may hold one
                if other := other_format(start.read(TAR_MARK[1]), dialect.name):
                    raise ValueError(f"data.source.path: {path} {other}")
        with open_records(source, dialect.sheet) as stream:
            records = cut(stream, dialect.quote, delimiter=dialect.delimiter.encode())
            found = read_header(path, records, dialect, named)
            header, start, line, records = found.names, found.start, found.line, found.records
            columns = file_columns(path, header, files[0], scan.header) if scan.header else None
            if columns:  # the same columns in another order: read by name, in the first file's
                scan.reordered.append(Path(path).name)
            else:
                scan.header, scan.renamed, scan.written_header = header, found.renamed, found.written
            if found.skipped:
                scan.preambles.append((Path(path).name, found.skipped))
            key_index = header.index(key) if key is not None else None
            count, first_chunk, last = 0, len(scan.chunks), deque(maxlen=FOOTNOTE_LINES)
            for record in records:
                if max_records is not None and scan.read >= max_records:
                    break
                wanted = not record.unterminated and (key_index is not None or len(scan.sample) < sample)
                row = split_row(record.raw, dialect) if wanted else None
                if row is not None and repeats_header(row, found.written):
                    scan.repeated, row = scan.repeated + 1, None
                elif wanted and row is None and not decodes(record.raw, dialect):
                    scan.undecodable += 1
                    scan.first_undecodable = scan.first_undecodable or f"{Path(path).name}:{record.line}"
                if row is not None and len(scan.sample) < sample:
                    scan.sample.append([row[at] for at in columns] if columns and len(row) == len(header) else row)
                if keys is not None:
                    if row is not None and len(row) == len(header):
                        keys.add(row[key_index].strip().encode(), scan.read)
                    lines.append(record.line)
                if count == 0:
                    chunk_starts.append(scan.read)
                last.append(record)
                scan.read += 1
                count += 1
                if count == CHUNK_ROWS and splittable:
                    scan.chunks.append(
                        Chunk(source, start, record.end, line, count, name=Path(path).name, columns=columns)
                    )
                    start, line, count = record.end, record.next_line, 0
            if count:
                scan.chunks.append(Chunk(source, start, None, line, count, name=Path(path).name, columns=columns))
            read_whole = max_records is None or scan.read < max_records
            notes = footnotes(last, dialect, len(header)) if read_whole and dialect.delimited else frozenset()
            if notes:
                scan.footnotes.append((Path(path).name, len(notes)))
                ends = scan.chunks[first_chunk:]  # this file's chunks: its lines are its own
                scan.chunks[first_chunk:] = [replace(chunk, footnote_lines=notes) for chunk in ends]
    if keys is not None:
        ranges = [(first, first + chunk.count) for chunk, first in zip(scan.chunks, chunk_starts, strict=True)]
        scan.chunks = [
            replace(chunk, duplicate_lines=frozenset(lines[ordinal] for ordinal in inside))
            for chunk, inside in zip(scan.chunks, keys.repeats_within(ranges), strict=True)
        ]
    return scan
