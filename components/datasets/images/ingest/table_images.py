"""Images kept in a table (`data.source.format: tfrecord | parquet`, or auto by the files' first bytes): TFRecord
files of tf.train.Examples with an encoded image feature (`image/encoded`, as TensorFlow's image pipelines and
TFX write them), or Parquet files with an encoded image column (binary, or a struct holding its `bytes`, as Hugging
Face datasets export images), beside a label.

The image column is the one whose values are encoded images (PNG, JPEG, GIF, BMP, TIFF, WebP: their first bytes);
the label is `data.label`, else the one column named as labels are (`label`, `image/class/label`, `class`, ...),
else the one other whole-number column; a number label's class names are its values (a Hugging Face export's
`ClassLabel` names where its metadata has them). The driver reads the labels (not the images) for the classes, and a
sample of the images' headers for what `data.image` leaves unset; the workers decode and convert each image as an
image file is (executor.ImageConverter.decoded). A record's place is `FILE#INDEX` (from 0).
"""

from __future__ import annotations

import io
import json
import logging
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kflow.components.datasets.images.ingest.raw_pixels import RawPixels
from kflow.components.datasets.images.ingest.source import UNLABELLED
from kflow.components.datasets.images.ingest.table_scan import (
    NO_LABEL,
    Scan,
    example_row,
    first_values,
    label_text,
    scan_parquet,
    scan_tfrecord,
)
from kflow.components.ingest.ingest_records import FILTERED, INVALID, make_reject
from kflow.components.util.encoded_images import encoded_bytes, image_kind
from kflow.components.util.example_proto import Example

log = logging.getLogger(__name__)

TABLE_FORMATS = ("tfrecord", "parquet")
LABEL_OF_A_TABLE = (
    "data.label: names the label column of images kept in a TFRecord or Parquet table; a folder's classes are its "
    "sub-folders' names, a manifest's its label column"
)
LABEL_NAMES = ("label", "labels", "image/class/label", "class", "target", "y", "category", "image/label")


def table_kind(source_path: str | None, source_format: str) -> str | None:
    """tfrecord or parquet where the images are kept in a table: named by data.source.format, or, with auto (or
    images to score), a file, a glob or a folder without sub-folders whose first table file's bytes say so."""
    if source_format in TABLE_FORMATS:
        return source_format
    if source_format not in ("auto", UNLABELLED) or not source_path:
        return None
    path = Path(source_path).expanduser()
    if path.is_dir() and any(child.is_dir() for child in path.iterdir()):
        return None  # class folders (or a folder of images to score)
    return table_format(source_path)


def table_files_of(source_path: str | None, kind: str) -> list[str]:
    """The source's files: the file, a folder's files of the kind's names, or a glob pattern's."""
    from kflow.components.datasets.tabular.table_files import table_files

    if kind == "parquet":
        return table_files("images", source_path, ("*.parquet",), "Parquet file")
    return table_files("images", source_path, ("*.tfrecord*", "*.tfrec*"), "TFRecord file")


def table_format(path: str) -> str | None:
    """tfrecord or parquet by the first file's first bytes (a TFRecord's frame: its length and its masked CRC)."""
    from kflow.components.datasets.tabular.table_files import table_files
    from kflow.components.ingest.compressed import open_source
    from kflow.components.ingest.tfrecord_file import read_records

    try:
        first = table_files("images", path, ("*.tfrecord*", "*.tfrec*", "*.parquet"), "table file")[0]
        with open(first, "rb") as raw:
            if raw.read(4) == b"PAR1":
                return "parquet"
        with open_source(first) as stream:
            _, record = next(read_records(stream), (0, None))
        return "tfrecord" if record is not None else None
    except (ValueError, OSError):
        return None


@dataclass(frozen=True)
class TableImages:
    """A table's image column, its label column, its classes and the chunks its records are read in."""

    kind: str  # tfrecord | parquet
    files: tuple[str, ...]
    names: tuple[str, ...]  # each file as positions name it
    image: str
    label: str | None  # None: images to score
    classes: tuple[str, ...]
    # (file index, first record, stop, where it starts: a TFRecord's byte offset in its uncompressed stream (0 for
    # a compressed file: one chunk), a Parquet row group's index)
    plan: tuple[tuple[int, int, int, int], ...]
    sizes: Counter  # {(height, width): images} of a sample of the headers
    modes: Counter  # {colour mode: images} of the same sample
    raw: RawPixels | None = None  # the image column holds pixels, not an encoded image (raw_pixels.py)

    @classmethod
    def open(cls, source_path: str | None, kind: str, label: str | None, labelled: bool = True) -> TableImages:
        """Reads the labels (a Parquet file's label column alone), a sample of the images' headers and where each
        chunk starts; a ValueError naming the field when it is no image table."""
        files = table_files_of(source_path, kind)
        names = [Path(file).name for file in files]
        names = [str(file) for file in files] if len(set(names)) < len(names) else names
        first = first_values(kind, files)
        raw = RawPixels.find(first) if not _encoded_columns(first) else None
        image = raw.column if raw is not None else _image_column(first, files[0])
        label = _label_column(first, image, label, files[0]) if labelled else None
        named = bool(kind == "parquet" and label and _hugging_face_names(files[0], label))
        scan = Scan(image, label, raw, named_classes=named)
        for index, file in enumerate(files):
            (scan_parquet if kind == "parquet" else scan_tfrecord)(scan, index, file)
        classes = _class_names(scan.labels, kind, files[0], label) if labelled else ()
        if labelled and len(classes) < 2:
            raise ValueError(f"data.label: {label!r} holds {len(classes)} class in {source_path}: a classifier needs 2")
        if not scan.sizes:
            raise ValueError(f"data.source.path: none of the sampled {image!r} values of {source_path} is an image")
        plan = tuple(scan.plan)
        raw = raw.with_scale(scan.largest, scan.numbers) if raw is not None else None
        return cls(kind, tuple(files), tuple(names), image, label, classes, plan, scan.sizes, scan.modes, raw)

    @staticmethod
    def check(source_path: str | None, kind: str, label: str | None) -> None:
        """What `open` refuses from the first records alone (kflow validate): no image column, no label; and, from a
        Parquet table's label column (read alone, cheaply), fewer than two classes."""
        files = table_files_of(source_path, kind)
        first, first_file = first_values(kind, files), files[0]
        raw = RawPixels.find(first) if not _encoded_columns(first) else None
        image = raw.column if raw is not None else _image_column(first, first_file)
        label = _label_column(first, image, label, first_file, say=False)
        if kind == "parquet":
            import pyarrow.parquet as pq

            scan = Scan(image, label, named_classes=bool(_hugging_face_names(first_file, label)))
            for path in files:
                for value in pq.ParquetFile(path).read(columns=[label]).column(0).to_pylist():
                    scan.label_value(value)
            if len(scan.labels) < 2:
                raise ValueError(f"data.label: {label!r} holds {len(scan.labels)} class in {source_path}: a classifier "
                                 "needs 2")  # fmt: skip

    @property
    def _size_columns(self) -> tuple[str, ...]:
        return tuple(self.raw.sizes or ()) if self.raw is not None else ()

    @property
    def records(self) -> int:
        return sum(stop - start for _, start, stop, _ in self.plan)

    def chunks(self, max_records: int | None) -> list[tuple[int, int, int, int]]:
        """The plan's chunks, cut to at most `max_records` records in all."""
        chunks, left = [], max_records
        for file, start, stop, where in self.plan:
            taken = stop - start if left is None else min(stop - start, left)
            if taken > 0:
                chunks.append((file, start, start + taken, where))
            left = None if left is None else left - taken
        return chunks

    def rows(self, chunk: tuple[int, int, int, int]) -> Iterator[tuple[int, dict[str, Any]]]:
        """(record number, {column: value}) of a chunk's records: the image and label columns only."""
        file, start, stop, where = chunk
        columns = [*dict.fromkeys(name for name in (self.image, self.label, *self._size_columns) if name)]
        if self.kind == "parquet":
            import pyarrow.parquet as pq

            number = start
            for batch in pq.ParquetFile(self.files[file]).iter_batches(256, row_groups=[where], columns=columns):
                for row in batch.to_pylist():
                    if number >= stop:
                        return
                    yield number, row
                    number += 1
            return
        from kflow.components.ingest.compressed import open_source
        from kflow.components.ingest.tfrecord_file import read_records

        with open_source(self.files[file]) as stream:
            stream.seek(where)
            for number, (offset, record) in enumerate(read_records(stream), start=start):
                if number >= stop:
                    return
                if record is None:
                    raise ValueError(f"data.source.path: {self.files[file]} is a broken TFRecord file at byte {offset}")
                yield number, example_row(record, tuple(columns))

    def class_name(self, value: Any) -> str | None:
        text = label_text(value)
        if text is None or not self.hf_names:
            return text
        if text == NO_LABEL:  # a Hugging Face ClassLabel's "no label"
            return None
        return self.classes[int(text)] if text.lstrip("-").isdigit() and 0 <= int(text) < len(self.classes) else text

    @property
    def hf_names(self) -> bool:
        return bool(self.classes) and not all(name.lstrip("-").isdigit() for name in self.classes)


@dataclass(frozen=True)
class TableImageConverter:
    """A chunk's records decoded and converted as image files are (executor.ImageConverter), keyed FILE#INDEX."""

    table: TableImages
    converter: Any  # executor.ImageConverter

    def __call__(self, chunk: tuple[int, int, int, int]) -> tuple[list, list]:
        table, accepted, found = self.table, [], []
        for number, row in table.rows(chunk):
            position = f"{table.names[chunk[0]]}#{number}"
            label = table.class_name(row.get(table.label)) if table.label else None
            value = row.get(table.image)
            encoded = table.raw.encoded(value, row) if table.raw is not None else encoded_bytes(value)
            if table.label and label not in self.converter.classes:  # none: filtered, as a table's unlabelled rows
                found.append(make_reject("missing_label", INVALID if label else FILTERED, position, {"label": label}))
                continue
            if encoded is None:
                found.append(make_reject("missing_image", INVALID, position, {"label": label}))
                continue
            pixels, problem = self.converter.decoded(io.BytesIO(encoded))
            if problem is not None:
                reason, details = problem
                found.append(make_reject(reason, INVALID, position, {"label": label}, **details))
                continue
            example = Example()
            features = example.features.feature
            features["image"].bytes_list.value.append(pixels)
            if label is not None:
                features["label"].int64_list.value.append(self.converter.classes[label])
            features["key"].bytes_list.value.append(position.encode("utf-8"))
            accepted.append((position, label or "", example.SerializeToString(deterministic=True)))
        return accepted, found


def _encoded_columns(row: dict[str, Any]) -> list[str]:
    return [name for name, value in row.items() if image_kind(value)]


def _image_column(row: dict[str, Any], path: str) -> str:
    found = _encoded_columns(row)
    if not found:
        shown = ", ".join(row) or "none"
        raise ValueError(
            f"data.source.path: no column of {path} holds images in its first record: encoded (PNG, JPEG, GIF, BMP, "
            f"TIFF, WebP) or as pixels (a square's worth of numbers, or height × width of them) (columns: {shown})"
        )
    preferred = [name for name in found if name in ("image/encoded", "image", "img", "image_raw")]
    return (preferred or found)[0]


def _label_column(row: dict[str, Any], image: str, label: str | None, path: str, say: bool = True) -> str:
    others = [name for name, value in row.items() if name != image and label_text(value) is not None]
    if label is not None:
        if label not in row:
            raise ValueError(f"data.label: {path} has no column {label!r} (columns: {', '.join(row)})")
        return label
    named = [name for name in others if name.lower() in LABEL_NAMES]
    whole = [name for name in others if isinstance(row[name], int) and not _is_metadata(name)]
    candidates = named or whole
    if len(candidates) == 1:
        if say:
            log.info("images ingest: the label is %r (set data.label to name another)", candidates[0])
        return candidates[0]
    raise ValueError(
        f"data.label: name the label column of {path} (its columns beside the image {image!r}: {', '.join(others)})"
    )


def _is_metadata(name: str) -> bool:
    return any(word in name.lower() for word in ("height", "width", "depth", "channel", "id", "index", "size"))


def _class_names(labels: Counter, kind: str, path: str, label: str | None) -> tuple[str, ...]:
    """The classes: a Hugging Face export's ClassLabel names, else the values (numbers in number order)."""
    if kind == "parquet":
        names = _hugging_face_names(path, label)
        if names and all(value.isdigit() and int(value) < len(names) for value in labels):
            return tuple(names)
    values = list(labels)
    if all(value.lstrip("-").isdigit() for value in values):
        return tuple(sorted(values, key=int))
    return tuple(sorted(values))


def _hugging_face_names(path: str, label: str | None) -> list[str] | None:
    import pyarrow.parquet as pq

    metadata = pq.ParquetFile(path).schema_arrow.metadata or {}
    try:
        features = json.loads(metadata[b"huggingface"])["info"]["features"]
        names = features[label].get("names")
    except (KeyError, ValueError, TypeError, AttributeError):
        return None
    return [str(name) for name in names] if isinstance(names, list) else None
