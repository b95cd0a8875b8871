"""Reading an image table's records: the first values of its columns (where the image and label columns are found),
a record as {column: value}, a label as text, and the driver's pass over the files (table_images.TableImages.open):
the labels, a sample of the images' headers, where each chunk starts."""

from __future__ import annotations

import io
import math
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from kflow.components.datasets.images.ingest.raw_pixels import RawPixels
from kflow.components.util.encoded_images import encoded_bytes
from kflow.components.util.example_proto import Example

CHUNK_RECORDS = 1000
HEADER_SAMPLE = 200  # images whose headers are read for the size and channels data.image leaves unset


@dataclass
class Scan:
    """What the driver's pass over the files gathers."""

    image: str
    label: str | None
    raw: RawPixels | None = None
    named_classes: bool = False  # a Hugging Face ClassLabel: -1 is no label (NO_LABEL)
    largest: float = 0.0  # pixels: the largest value of the sampled records
    numbers: bool = False  # pixels: held as numbers (not raw bytes)
    labels: Counter = field(default_factory=Counter)
    plan: list[tuple[int, int, int, int]] = field(default_factory=list)
    sizes: Counter = field(default_factory=Counter)
    modes: Counter = field(default_factory=Counter)
    sampler: Any = field(default_factory=lambda: _Sampler(HEADER_SAMPLE))

    def label_value(self, value: Any) -> None:
        text = label_text(value) if self.label is not None else None
        if text is not None and not (self.named_classes and text == NO_LABEL):
            self.labels[text] += 1

    def image_value(self, value: Any) -> None:
        if self.sampler.takes():
            self.sampled_image(value)

    def sampled_image(self, value: Any) -> None:
        """Counts a sampled image's size and mode (pixels: the table's, without decoding)."""
        if self.raw is not None:
            self.sizes[self.raw.shape[:2]] += 1
            self.modes[self.raw.mode] += 1
            if isinstance(value, list) and value:
                self.numbers, self.largest = True, max(self.largest, float(max(value)))
        else:
            _header(value, self.sizes, self.modes)


def scan_tfrecord(scan: Scan, index: int, path: str) -> None:
    """Every record parsed (its label, a sample's headers); a chunk starts every CHUNK_RECORDS records of a plain file
    (read from its byte offset), a compressed file is one chunk (read from its start)."""
    from kflow.components.ingest.compressed import compression, open_source
    from kflow.components.ingest.tfrecord_file import read_records

    plain, starts, count = compression(path) is None, [], 0
    with open_source(path) as stream:
        for number, (offset, record) in enumerate(read_records(stream)):
            if record is None:
                raise ValueError(f"data.source.path: {path} is a broken TFRecord file at byte {offset}")
            if number == 0 or (plain and number % CHUNK_RECORDS == 0):
                starts.append((number, offset))
            row = example_row(record, (scan.image, scan.label))
            scan.label_value(row.get(scan.label))
            scan.image_value(row.get(scan.image))
            count += 1
    stops = [number for number, _ in starts[1:]] + [count]
    scan.plan += [(index, first, stop, offset) for (first, offset), stop in zip(starts, stops, strict=True)]


def scan_parquet(scan: Scan, index: int, path: str) -> None:
    """The label column read alone, the image column in batches for a sample's headers; a chunk a row group."""
    import pyarrow.parquet as pq

    parquet, first = pq.ParquetFile(path), 0
    for group in range(parquet.num_row_groups):
        count = parquet.metadata.row_group(group).num_rows
        if count:
            scan.plan.append((index, first, first + count, group))
        first += count
    if scan.label is not None:
        for value in parquet.read(columns=[scan.label]).column(0).to_pylist():
            scan.label_value(value)
    for batch in parquet.iter_batches(1024, columns=[scan.image]):
        column = batch.column(0)
        for place in range(len(column)):
            if scan.sampler.takes():  # only a sampled cell made a Python value
                scan.sampled_image(column[place].as_py())


class _Sampler:
    """Takes about `size` items spread over a stream of unknown length: every one, then every 2nd, 4th, ..."""

    def __init__(self, size: int) -> None:
        self.size, self.seen, self.step, self.taken = size, 0, 1, 0

    def takes(self) -> bool:
        self.seen += 1
        if (self.seen - 1) % self.step:
            return False
        self.taken += 1
        if self.taken >= 2 * self.size:
            self.step, self.taken = self.step * 2, self.size
        return True


FIRST_ROWS, FIRST_FILES = 20, 8


def first_values(kind: str, files: list[str]) -> dict[str, Any]:
    """{column: its first value that is there} over the first FIRST_ROWS records of the first FIRST_FILES files: what
    the image and label columns are found by (a TFRecord's features are sparse: a first record may lack the label,
    a first image be empty, a first file be another split's, without labels)."""
    values: dict[str, Any] = {}
    for path in files[:FIRST_FILES]:
        for row in first_rows(kind, path, FIRST_ROWS):
            for name, value in row.items():
                if name not in values or not _present(values[name]):
                    values[name] = value
    if not values:
        raise ValueError(f"data.source.path: {files[0]} holds no records")
    return values


def _present(value: Any) -> bool:
    """A value that says something: not empty, not a struct of nothing (Hugging Face's {bytes: None, path: None}),
    not a missing label (NaN, a negative number)."""
    if isinstance(value, dict):
        return any(_present(item) for item in value.values())
    if isinstance(value, int | float) and not isinstance(value, bool):
        return label_text(value) is not None
    return value not in (None, b"", "", [])


def first_rows(kind: str, path: str, count: int) -> Iterator[dict[str, Any]]:
    """The first `count` records of a file as {column: value}, every column."""
    if kind == "parquet":
        import pyarrow.parquet as pq

        for batch in pq.ParquetFile(path).iter_batches(count):
            yield from batch.to_pylist()[:count]
            return
        return
    from kflow.components.ingest.compressed import open_source
    from kflow.components.ingest.tfrecord_file import read_records

    with open_source(path) as stream:
        for number, (offset, record) in enumerate(read_records(stream)):
            if number >= count:
                return
            if record is None:
                raise ValueError(f"data.source.path: {path} is a broken TFRecord file at byte {offset}")
            yield example_row(record, ())


def example_row(record: bytes, columns: tuple) -> dict[str, Any]:
    example = Example.FromString(record)
    row = {}
    for name, feature in sorted(example.features.feature.items()):  # a map's order is protobuf's: by name
        if columns and name not in columns:
            continue
        kind = feature.WhichOneof("kind")
        values = list(getattr(feature, kind).value) if kind else []
        row[name] = values[0] if len(values) == 1 else values
    return row


def label_text(value: Any) -> str | None:
    """A label value as text: a string, a number (a whole float as its integer), or None (missing, a list, NaN)."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or value is None or isinstance(value, list | dict) or value == "":
        return None
    return None if isinstance(value, float) and math.isnan(value) else str(value)


NO_LABEL = "-1"  # what a Hugging Face ClassLabel column holds for a record without a label


def _header(value: Any, sizes: Counter, modes: Counter) -> None:
    """Counts the size and mode of an encoded image from its header (no pixels decoded); skips what is none."""
    from PIL import Image

    from kflow.components.datasets.images.ingest.image_format import shown_size

    encoded = encoded_bytes(value)
    if encoded is None:
        return
    try:
        with Image.open(io.BytesIO(encoded)) as opened:
            sizes[shown_size(opened)] += 1
            modes[opened.mode] += 1
    except Exception:  # noqa: BLE001 - an unreadable image is the worker's to reject (with its reason).
        return
