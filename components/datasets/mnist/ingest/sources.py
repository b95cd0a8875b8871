"""Where MNIST comes from: a Keras `mnist.npz`, the four IDX files, scikit-learn's digits, TFDS or the web.

Each reader returns the source's splits ("train" and "test") as streams of numpy arrays, as read:
nothing is validated here, so that the executor can reject bad records one by one and say where
they came from. The npz and IDX files (gzipped or not) are read a block of records at a time, so
that a source of any size is ingested with flat memory.
"""

from __future__ import annotations

import logging
import math
import struct
import zipfile
import zlib
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, replace
from functools import partial
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
from kflow.components.ingest.split_plan import stable_hash

log = logging.getLogger(__name__)

_NPZ_ARRAYS = {"train": ("x_train", "y_train"), "test": ("x_test", "y_test")}
_IDX_DTYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}
# Share of scikit-learn's digits that go to the source's test split, as in MNIST (10,000 of 70,000).
_DIGITS_TEST_SHARE = 6
_READ_BYTES = 2**20  # Bytes read from a file at a time.
_READ_BLOCK = 10_000  # Records a block when a stream is read whole.


@dataclass(frozen=True)
class ArrayStream:
    """One array of a source (the images or the labels of a split), read in blocks of records.

    `declared` is the number of records a file's header promises (None without a header); a file cut
    short holds fewer. Reading a block at a time keeps memory flat whatever the size of the source.
    """

    origin: str
    open_blocks: Callable[[int], Iterator[np.ndarray]]
    declared: int | None = None

    @classmethod
    def of(cls, array: np.ndarray, origin: str) -> ArrayStream:
        """A stream over an array already in memory."""
        return cls(origin, lambda size: (array[start : start + size] for start in range(0, len(array), size)))

    def blocks(self, size: int) -> Iterator[np.ndarray]:
        """The records in blocks of `size` (the last one shorter)."""
        return self.open_blocks(size)

    def read(self) -> np.ndarray:
        """The whole array (for small sources and tests)."""
        blocks = list(self.blocks(_READ_BLOCK))
        return np.concatenate(blocks) if blocks else np.empty((0,))


@dataclass(frozen=True)
class SourceSplit:
    """The records of one split of the source, as streams: record i pairs image i with label i.

    When one stream is shorter than the other, or a file's header promised more records than it
    holds, the records past the end of the shorter stream are unmatched (see `unmatched_rejects`).
    `positions`, when given, is each record's index in its origin, when it is not the record's own index.
    """

    name: str
    images: ArrayStream
    labels: ArrayStream
    positions: ArrayStream | None = None

    def limit(self, max_records: int) -> SourceSplit:
        """The first `max_records` records only."""
        return replace(
            self,
            images=_limited(self.images, max_records),
            labels=_limited(self.labels, max_records),
            positions=None if self.positions is None else _limited(self.positions, max_records),
        )

    def size(self, images: int, labels: int) -> int:
        """The records of the split, given how many images and labels its streams held."""
        return max(images, labels, self.images.declared or 0, self.labels.declared or 0)

    def unmatched_rejects(self, images: int, labels: int) -> list[dict[str, Any]]:
        """A reject for each record past the end of the images or of the labels, given how many each stream held."""
        counts = {
            "images": images,
            "images_declared": self.images.declared,
            "labels": labels,
            "labels_declared": self.labels.declared,
        }
        rejects = []
        for index in range(min(images, labels), self.size(images, labels)):
            key = record_key(self.name, index)
            if index >= images:
                reason = _shortfall(index, self.images.declared, "missing_image")
                rejects.append(reject(reason, f"{self.images.origin}#{index}", key, **counts))
            else:
                reason = _shortfall(index, self.labels.declared, "missing_label")
                rejects.append(reject(reason, f"{self.labels.origin}#{index}", key, **counts))
        return rejects


def _limited(stream: ArrayStream, max_records: int) -> ArrayStream:
    def blocks(size: int) -> Iterator[np.ndarray]:
        left = max_records
        for block in stream.blocks(min(size, max_records)):
            if left <= 0:
                return
            yield block[:left]
            left -= len(block)

    declared = None if stream.declared is None else min(stream.declared, max_records)
    return ArrayStream(stream.origin, blocks, declared)


def _shortfall(index: int, declared: int | None, missing_reason: str) -> str:
    """A record the file's header promised is truncated; one it never promised is missing."""
    return "truncated_idx" if declared is not None and index < declared else missing_reason


@dataclass(frozen=True)
class Source:
    format: str
    location: str
    splits: tuple[SourceSplit, ...]

    def limit(self, max_records: int | None) -> Source:
        if max_records is None:
            return self
        return replace(self, splits=tuple(split.limit(max_records) for split in self.splits))


def read_source(source_path: str | None, source_format: str = "auto") -> Source:
    """Finds the source that `source_path` and `source_format` name and opens it (headers checked, records
    not read yet: the npz and IDX files are streamed, the other sources are small enough to load)."""
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
    """Opens a Keras-layout npz (x_train, y_train, x_test, y_test): each array is streamed from its zip member."""
    try:
        with zipfile.ZipFile(path) as archive:
            members = {name.removesuffix(".npy"): name for name in archive.namelist()}
            missing = [name for names in _NPZ_ARRAYS.values() for name in names if name not in members]
            if missing:
                raise ValueError(f"{path} lacks the arrays {missing} (it holds {sorted(members)})")
            headers = {}
            for names in _NPZ_ARRAYS.values():
                for name in names:
                    with archive.open(members[name]) as member:
                        headers[name] = _npy_header(member)
    except (zipfile.BadZipFile, OSError, EOFError) as error:
        raise ValueError(f"{path} is not a readable .npz file: {error}") from error
    objects = [name for name, (_, _, dtype) in headers.items() if dtype.hasobject]
    if objects:
        raise ValueError(
            f"{path} holds Python objects (pickled arrays: {objects}), which kflow does not load from data "
            f"files; save the images and labels as numeric arrays"
        )
    scalars = [name for name, (shape, _, _) in headers.items() if not shape]
    if scalars:
        raise ValueError(f"{path}: {scalars} must be arrays with one entry per record, not scalars")

    def stream(name: str) -> ArrayStream:
        shape, fortran_order, dtype = headers[name]
        return ArrayStream(
            f"{path.name}[{name}]", partial(_npz_blocks, path, members[name], shape, fortran_order, dtype)
        )

    return tuple(SourceSplit(split, stream(x), stream(y)) for split, (x, y) in _NPZ_ARRAYS.items())


def _npy_header(file: Any) -> tuple[tuple[int, ...], bool, np.dtype]:
    """The shape, order and dtype of a .npy stream, which is left at the first value."""
    version = np.lib.format.read_magic(file)
    if version == (1, 0):
        return np.lib.format.read_array_header_1_0(file)
    if version == (2, 0):
        return np.lib.format.read_array_header_2_0(file)
    raise ValueError(f"npy format version {version} is not supported (1.0 and 2.0 are)")


def _npz_blocks(
    path: Path, member: str, shape: tuple[int, ...], fortran_order: bool, dtype: np.dtype, size: int
) -> Iterator[np.ndarray]:
    with zipfile.ZipFile(path) as archive, archive.open(member) as file:
        _npy_header(file)
        if fortran_order:  # Records are not contiguous in a Fortran-ordered array: it is read whole.
            array = np.asfortranarray(np.frombuffer(file.read(), dtype).reshape(shape[::-1]).T)
            yield from ArrayStream.of(array, member).blocks(size)
            return
        yield from _record_blocks(iter(partial(file.read, _READ_BYTES), b""), shape, dtype, size)


def _record_blocks(
    pieces: Iterator[bytes], shape: tuple[int, ...], dtype: np.dtype, size: int
) -> Generator[np.ndarray, None, int]:
    """Blocks of `size` complete records of `shape[1:]` from a stream of bytes; stops at `shape[0]` records
    (returning the bytes it read past them) or when the bytes end (a part of a record at the end is dropped)."""
    record_bytes = math.prod(shape[1:]) * dtype.itemsize
    block_bytes = max(1, size * record_bytes)
    left = shape[0]
    buffer = bytearray()
    for piece in pieces:
        buffer += piece
        while len(buffer) >= block_bytes and left > 0:
            count = min(size, left)
            yield _records(bytes(buffer[: count * record_bytes]), shape, dtype, count)
            del buffer[: count * record_bytes]
            left -= count
        if left <= 0:
            return len(buffer)
    count = min(left, len(buffer) // record_bytes if record_bytes else left)
    if count:
        yield _records(bytes(buffer[: count * record_bytes]), shape, dtype, count)
    return max(0, len(buffer) - left * record_bytes)


def _records(data: bytes, shape: tuple[int, ...], dtype: np.dtype, count: int) -> np.ndarray:
    array = np.frombuffer(data, dtype).reshape((count, *shape[1:]))
    return array.astype(dtype.newbyteorder("="), copy=False)


def read_idx_folder(folder: Path) -> tuple[SourceSplit, ...]:
    """Opens the four MNIST IDX files of a folder, each gzipped or not."""
    files = _idx_files(folder)
    missing = [" or ".join(_idx_names(split, kind)) for (split, kind), found in files.items() if found is None]
    if missing:
        raise ValueError(f"{folder} lacks the IDX files: {'; '.join(missing)}")
    return tuple(
        SourceSplit(split, open_idx(files[(split, "images")]), open_idx(files[(split, "labels")]))
        for split in SOURCE_SPLITS
    )


def open_idx(path: Path) -> ArrayStream:
    """An IDX file as a stream of its complete records; its header says how many it promises (`declared`).

    A file cut short yields the records before the cut; a broken header is a ValueError.
    """
    head = b"".join(_take(_byte_stream(path, 4 + 4 * 255), 4 + 4 * 255))
    if len(head) < 4 or head[0] != 0 or head[1] != 0 or head[2] not in _IDX_DTYPES or head[3] == 0:
        raise ValueError(f"{path} is not an IDX file: its magic number is {head[:4].hex() or 'missing'}")
    header_size = 4 + 4 * head[3]
    if len(head) < header_size:
        raise ValueError(f"{path}: the IDX header is cut short ({len(head)} of {header_size} bytes)")
    shape = struct.unpack(f">{head[3]}I", head[4:header_size])
    dtype = np.dtype(_IDX_DTYPES[head[2]])

    def blocks(size: int) -> Iterator[np.ndarray]:
        pieces = _byte_stream(path, _READ_BYTES)
        left_over = yield from _record_blocks(_skip(pieces, header_size), shape, dtype, size)
        extra = left_over + sum(len(piece) for piece in pieces)
        if extra:
            log.warning("ingest: %s holds %d bytes past its last record; ignored", path, extra)

    return ArrayStream(path.name, blocks, shape[0])


def _byte_stream(path: Path, piece_bytes: int) -> Iterator[bytes]:
    """The content of a file in pieces, gunzipped when it is gzipped; a gzip stream cut short yields what it holds."""
    with path.open("rb") as file:
        first = file.read(piece_bytes)
        if first[:2] != b"\x1f\x8b":
            yield first
            yield from iter(partial(file.read, piece_bytes), b"")
            return
        data = first
        decompressor = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
        while data:
            try:
                yield decompressor.decompress(data)
            except zlib.error as error:
                raise ValueError(f"{path} is not a valid gzip file: {error}") from error
            data = decompressor.unused_data
            if decompressor.eof:
                yield decompressor.flush()
                # A gzip file may hold several members, one after the other.
                decompressor = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
                if data[:2] != b"\x1f\x8b":
                    data += file.read(2)
                    if data[:2] != b"\x1f\x8b":
                        return
            if not data:
                data = file.read(piece_bytes)
        if not decompressor.eof:
            log.warning("ingest: %s is cut short; reading what it holds", path)


def _take(pieces: Iterator[bytes], count: int) -> Iterator[bytes]:
    """The first `count` bytes of a stream of pieces."""
    for piece in pieces:
        yield piece[:count]
        count -= len(piece)
        if count <= 0:
            return


def _skip(pieces: Iterator[bytes], count: int) -> Iterator[bytes]:
    """A stream of pieces without its first `count` bytes; `pieces` goes on past what is taken."""
    for piece in pieces:
        if count < len(piece):
            yield piece[count:]
            break
        count -= len(piece)
    yield from pieces


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
            split,
            ArrayStream.of(images[mask], "sklearn_digits"),
            ArrayStream.of(labels[mask], "sklearn_digits"),
            positions=ArrayStream.of(np.flatnonzero(mask), "sklearn_digits"),
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
        image_stream = ArrayStream.of(images, f"tfds:mnist/{split}[image]")
        splits.append(SourceSplit(split, image_stream, ArrayStream.of(labels, f"tfds:mnist/{split}[label]")))
    return tuple(splits)


def read_download() -> tuple[SourceSplit, ...]:
    """MNIST through `keras.datasets.mnist.load_data()`, which downloads it to ~/.keras/datasets once."""
    import keras  # A slow import that only this source needs.

    (x_train, y_train), (x_test, y_test) = keras.datasets.mnist.load_data()
    arrays = {"x_train": x_train, "y_train": y_train, "x_test": x_test, "y_test": y_test}
    return tuple(
        SourceSplit(split, *(ArrayStream.of(arrays[name], f"keras.datasets.mnist[{name}]") for name in names))
        for split, names in _NPZ_ARRAYS.items()
    )
