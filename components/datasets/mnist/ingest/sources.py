"""Where MNIST comes from: a Keras `mnist.npz`, the four IDX files, scikit-learn's digits, TFDS or the web.

Each reader returns the source's splits ("train" and "test") as numpy arrays, as read:
nothing is validated here, so that the executor can reject bad records one by one
and say where they came from.
"""

from __future__ import annotations

import logging
import math
import struct
import zipfile
import zlib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from kflow.components.datasets.mnist.ingest.locate import (
    SOURCE_SPLITS,
    _idx_files,
    _idx_names,
    resolve,
)
from kflow.components.datasets.mnist.ingest.records import record_key, reject
from kflow.components.util.beam_ingest import stable_hash

log = logging.getLogger(__name__)

_NPZ_ARRAYS = {"train": ("x_train", "y_train"), "test": ("x_test", "y_test")}
_IDX_DTYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}
# Share of scikit-learn's digits that go to the source's test split, as in MNIST (10,000 of 70,000).
_DIGITS_TEST_SHARE = 6


@dataclass(frozen=True)
class SourceSplit:
    """The records of one split of the source, as read.

    Record i pairs `images[i]` with `labels[i]`. The split holds `size` records: when
    one array is shorter than the other, or a file's header promised more records than
    it holds (`declared_*`), the records past the end of the shorter array are unmatched.
    """

    name: str
    images: np.ndarray
    labels: np.ndarray
    image_origin: str
    label_origin: str
    declared_images: int | None = None
    declared_labels: int | None = None
    positions: np.ndarray | None = None  # A record's index in its origin, when it is not the record's own index.

    @property
    def paired(self) -> int:
        return min(len(self.images), len(self.labels))

    @property
    def size(self) -> int:
        return max(len(self.images), len(self.labels), self.declared_images or 0, self.declared_labels or 0)

    def limit(self, max_records: int) -> SourceSplit:
        """The first `max_records` records only."""
        return replace(
            self,
            images=self.images[:max_records],
            labels=self.labels[:max_records],
            declared_images=None if self.declared_images is None else min(self.declared_images, max_records),
            declared_labels=None if self.declared_labels is None else min(self.declared_labels, max_records),
            positions=None if self.positions is None else self.positions[:max_records],
        )

    def unmatched_rejects(self) -> list[dict[str, Any]]:
        """A reject for each record past the end of the images or of the labels."""
        rejects = []
        for index in range(self.paired, self.size):
            key = record_key(self.name, index)
            if index >= len(self.images):
                reason = _shortfall(index, self.declared_images, "missing_image")
                rejects.append(reject(reason, f"{self.image_origin}#{index}", key, **self._counts()))
            else:
                reason = _shortfall(index, self.declared_labels, "missing_label")
                rejects.append(reject(reason, f"{self.label_origin}#{index}", key, **self._counts()))
        return rejects

    def _counts(self) -> dict[str, int | None]:
        return {
            "images": len(self.images),
            "images_declared": self.declared_images,
            "labels": len(self.labels),
            "labels_declared": self.declared_labels,
        }


def _shortfall(index: int, declared: int | None, missing_reason: str) -> str:
    """A record the file's header promised is truncated; one it never promised is missing."""
    return "truncated_idx" if declared is not None and index < declared else missing_reason


@dataclass(frozen=True)
class Source:
    format: str
    location: str
    splits: tuple[SourceSplit, ...]

    @property
    def size(self) -> int:
        return sum(split.size for split in self.splits)

    def limit(self, max_records: int | None) -> Source:
        if max_records is None:
            return self
        return replace(self, splits=tuple(split.limit(max_records) for split in self.splits))


def read_source(source_path: str | None, source_format: str = "auto") -> Source:
    """Finds the source that `source_path` and `source_format` name and reads it."""
    source_format, path = resolve(source_path, source_format)
    if source_format == "npz":
        return Source("npz", str(path), read_npz(path))
    if source_format == "idx":
        return Source("idx", str(path), read_idx_folder(path))
    if source_format == "sklearn_digits":
        return Source("sklearn_digits", "sklearn.datasets.load_digits", read_sklearn_digits())
    if source_format == "tfds":
        return Source("tfds", f"tensorflow_datasets mnist (data_dir={path})", read_tfds(path))
    return Source("download", "keras.datasets.mnist.load_data", read_download())


def read_npz(path: Path) -> tuple[SourceSplit, ...]:
    """Reads a Keras-layout npz: x_train, y_train, x_test, y_test."""
    try:
        with np.load(path, allow_pickle=False) as data:
            missing = [name for names in _NPZ_ARRAYS.values() for name in names if name not in data.files]
            if missing:
                raise ValueError(f"{path} lacks the arrays {missing} (it holds {sorted(data.files)})")
            arrays = {name: data[name] for names in _NPZ_ARRAYS.values() for name in names}
    except (zipfile.BadZipFile, OSError, EOFError) as error:
        raise ValueError(f"{path} is not a readable .npz file: {error}") from error
    except ValueError as error:
        if "allow_pickle" not in str(error):
            raise
        raise ValueError(
            f"{path} holds Python objects (pickled arrays), which kflow does not load from data files; "
            f"save the images and labels as numeric arrays"
        ) from error
    scalars = [name for name, array in arrays.items() if array.ndim == 0]
    if scalars:
        raise ValueError(f"{path}: {scalars} must be arrays with one entry per record, not scalars")
    return tuple(
        SourceSplit(split, arrays[x], arrays[y], f"{path.name}[{x}]", f"{path.name}[{y}]")
        for split, (x, y) in _NPZ_ARRAYS.items()
    )


def read_idx_folder(folder: Path) -> tuple[SourceSplit, ...]:
    """Reads the four MNIST IDX files of a folder, each gzipped or not."""
    files = _idx_files(folder)
    missing = [" or ".join(_idx_names(split, kind)) for (split, kind), found in files.items() if found is None]
    if missing:
        raise ValueError(f"{folder} lacks the IDX files: {'; '.join(missing)}")
    splits = []
    for split in SOURCE_SPLITS:
        images_path, labels_path = files[(split, "images")], files[(split, "labels")]
        images, declared_images = read_idx(images_path)
        labels, declared_labels = read_idx(labels_path)
        splits.append(
            SourceSplit(split, images, labels, images_path.name, labels_path.name, declared_images, declared_labels)
        )
    return tuple(splits)


def read_idx(path: Path) -> tuple[np.ndarray, int]:
    """Reads an IDX file: the complete records it holds and the number of records its header promises.

    A file cut short yields the records before the cut; a broken header is a ValueError.
    """
    data = _read_bytes(path)
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] not in _IDX_DTYPES or data[3] == 0:
        raise ValueError(f"{path} is not an IDX file: its magic number is {data[:4].hex() or 'missing'}")
    header_size = 4 + 4 * data[3]
    if len(data) < header_size:
        raise ValueError(f"{path}: the IDX header is cut short ({len(data)} of {header_size} bytes)")
    dims = struct.unpack(f">{data[3]}I", data[4:header_size])
    dtype = np.dtype(_IDX_DTYPES[data[2]])
    record_values = math.prod(dims[1:])
    record_bytes = record_values * dtype.itemsize
    payload = len(data) - header_size
    complete = dims[0] if record_bytes == 0 else min(dims[0], payload // record_bytes)
    if payload > dims[0] * record_bytes:
        log.warning("ingest: %s holds %d bytes past its last record; ignored", path, payload - dims[0] * record_bytes)
    array = np.frombuffer(data, dtype, count=complete * record_values, offset=header_size)
    return array.reshape((complete, *dims[1:])).astype(dtype.newbyteorder("="), copy=False), dims[0]


def read_sklearn_digits() -> tuple[SourceSplit, ...]:
    """scikit-learn's 1,797 8x8 digits (values 0..16) in the MNIST layout: 20x20 in a 28x28 uint8 frame.

    A digit goes to the source's test split when a hash of its index says so (1 in 6, as in MNIST).
    """
    # scipy and scikit-learn take a second to import; only this source needs them.
    from scipy import ndimage
    from sklearn.datasets import load_digits

    digits = load_digits()
    count = len(digits.images)
    upscaled = ndimage.zoom(digits.images, (1, 20 / 8, 20 / 8), order=1)
    images = np.zeros((count, 28, 28), np.uint8)
    images[:, 4:24, 4:24] = np.clip(np.rint(upscaled * (255 / 16)), 0, 255).astype(np.uint8)
    labels = digits.target.astype(np.int64)
    is_test = np.array([stable_hash(f"digits-{index:04d}") % _DIGITS_TEST_SHARE == 0 for index in range(count)])
    return tuple(
        SourceSplit(
            split, images[mask], labels[mask], "sklearn_digits", "sklearn_digits", positions=np.flatnonzero(mask)
        )
        for split, mask in (("train", ~is_test), ("test", is_test))
    )


def read_tfds(data_dir: Path | None) -> tuple[SourceSplit, ...]:
    """MNIST from TensorFlow Datasets (downloads it into `data_dir` on first use)."""
    import tensorflow_datasets as tfds  # An optional, slow import that only this source needs.

    splits = []
    for split in SOURCE_SPLITS:
        dataset = tfds.load("mnist", split=split, batch_size=-1, as_supervised=True, data_dir=data_dir)
        images, labels = tfds.as_numpy(dataset)
        if images.ndim == 4 and images.shape[-1] == 1:
            images = images[..., 0]
        splits.append(SourceSplit(split, images, labels, f"tfds:mnist/{split}[image]", f"tfds:mnist/{split}[label]"))
    return tuple(splits)


def read_download() -> tuple[SourceSplit, ...]:
    """MNIST through `keras.datasets.mnist.load_data()`, which downloads it to ~/.keras/datasets once."""
    import keras  # A slow import that only this source needs.

    (x_train, y_train), (x_test, y_test) = keras.datasets.mnist.load_data()
    return (
        SourceSplit("train", x_train, y_train, "keras.datasets.mnist[x_train]", "keras.datasets.mnist[y_train]"),
        SourceSplit("test", x_test, y_test, "keras.datasets.mnist[x_test]", "keras.datasets.mnist[y_test]"),
    )


def _read_bytes(path: Path) -> bytes:
    """The content of a file, gunzipped when it is gzipped; a gzip stream cut short yields what it holds."""
    data = path.read_bytes()
    if data[:2] != b"\x1f\x8b":
        return data
    parts = []
    while data[:2] == b"\x1f\x8b":  # A gzip file may hold several members, one after the other.
        decompressor = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
        try:
            parts.append(decompressor.decompress(data) + decompressor.flush())
        except zlib.error as error:
            raise ValueError(f"{path} is not a valid gzip file: {error}") from error
        if not decompressor.eof:
            log.warning("ingest: %s is cut short; reading what it holds", path)
            break
        data = decompressor.unused_data
    return b"".join(parts)
