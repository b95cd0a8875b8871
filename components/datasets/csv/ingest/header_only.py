"""A CSV source's columns without its records: what `kflow validate` reads of each span but the newest (whose
header and sample `source.inspect_source` reads), to refuse a span whose ingest would lack the label or key."""

from __future__ import annotations

from typing import Any

from kflow.components.datasets.csv.ingest.json_lines import dialect_of
from kflow.components.datasets.csv.ingest.source import resolve, scan_delimited
from kflow.components.datasets.tabular import columns as cols

# Records read past the header: enough to find the delimiter and encoding as the ingest does, not to type columns.
HEADER_RECORDS = 20


def source_columns(
    *, source_path: str | None = None, csv_format: dict[str, Any] | None = None, **parameters: Any
) -> tuple[str, list[str]]:
    """(the file read, its columns as the ingest names them): the first file's header, read with the dialect the
    ingest reads it with (the delimiter, encoding, a preamble above the header). Raises the ValueError or OSError
    the ingest would for a file it cannot read."""
    choice = cols.ColumnChoice.of(parameters)
    source_format = parameters.get("source_format", "auto")
    files = resolve(source_path, source_format)
    dialect = dialect_of(files[:1], source_format, csv_format, {}, choice.infer_rows)
    if not dialect.delimited and not choice.named <= set(dialect.header or ()):  # JSON keys past the sample
        dialect = dialect_of(files[:1], source_format, csv_format, {}, None)
    scan, _, _ = scan_delimited(
        files[:1], dialect, max_records=HEADER_RECORDS, sample=HEADER_RECORDS, named=choice.named
    )
    return files[0], list(scan.header)
