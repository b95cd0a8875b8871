"""What happens to each record: its key, its split and shard, its validation and its serialisation.

The functions here work on many records at once, as numpy arrays, so that the Beam
pipeline of the executor pays its per-element overhead once per chunk or shard.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from typing import Any, NamedTuple

import numpy as np

from kflow.components.ingest.split_plan import stable_hash
from kflow.components.util.example_proto import Example

TEST_SPLIT = "test"
"""The source's test records all form this split; the source's training records are hashed into the others."""

_SPLIT_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
# Split names that would collide with the test split or with the executor's summary keys.
_RESERVED_SPLIT_NAMES = (TEST_SPLIT, "read", "rejected", "source_format")


def record_key(source_split: str, index: int) -> str:
    """The stable key of the `index`-th record of a source split, e.g. "train-00042"."""
    return f"{source_split}-{index:05d}"


@dataclass(frozen=True)
class SplitPlan:
    """Assigns each record to an output split from a hash of its key only.

    The source's training records go to the hash buckets of `buckets` ({"train": 9, "eval": 1}:
    9 buckets of 10 for train); the source's test records go to the split "test".
    Buckets are laid out in the order of sorted split names, so the order of the dict
    given by a user does not change the assignment.
    """

    buckets: tuple[tuple[str, int], ...]

    @classmethod
    def from_parameters(cls, split: Any) -> SplitPlan:
        if not isinstance(split, dict) or not split:
            raise ValueError(
                f"split must be a non-empty dict of split name to hash buckets, e.g. "
                f"{{'train': 9, 'eval': 1}}; got {split!r}"
            )
        for name, count in split.items():
            if not isinstance(name, str) or not _SPLIT_NAME.match(name):
                raise ValueError(f"split name {name!r} must match {_SPLIT_NAME.pattern} (split: {split!r})")
            if name in _RESERVED_SPLIT_NAMES:
                raise ValueError(
                    f"split name {name!r} is reserved (the source's test records form the split {TEST_SPLIT!r}); "
                    f"split only divides the source's training records (split: {split!r})"
                )
            if isinstance(count, bool) or not isinstance(count, int) or count < 1:
                raise ValueError(f"split {name!r} must have a positive integer number of buckets, got {count!r}")
        return cls(tuple(sorted(split.items())))

    @property
    def splits(self) -> tuple[str, ...]:
        """Every output split: the bucket splits, then the test split."""
        return tuple(name for name, _ in self.buckets) + (TEST_SPLIT,)

    @cached_property
    def _total_buckets(self) -> int:
        return sum(count for _, count in self.buckets)

    def assign(self, source_split: str, key: str) -> str:
        """The split of the record with this key."""
        if source_split == TEST_SPLIT:
            return TEST_SPLIT
        bucket = stable_hash(key) % self._total_buckets
        for name, count in self.buckets:
            if bucket < count:
                return name
            bucket -= count
        raise AssertionError("unreachable: the bucket is below the sum of the counts")


@dataclass(frozen=True)
class RecordLayout:
    """What a valid record looks like, as the schema says."""

    image_shape: tuple[int, ...]
    image_dtype: str
    label_min: int
    label_max: int


@dataclass(frozen=True)
class Chunk:
    """Consecutive records of one source split, from `start`, with where they come from.

    `images` and `labels` have one entry per record. `image_origin#position` names the
    place of a record in the source (a file, an array), e.g. "train-images-idx3-ubyte.gz#123";
    the position is `start + i` unless `positions` gives it.
    """

    source_split: str
    start: int
    images: np.ndarray
    labels: np.ndarray
    image_origin: str
    label_origin: str
    positions: np.ndarray | None = None

    def position(self, i: int, origin: str) -> str:
        return f"{origin}#{self.start + i if self.positions is None else int(self.positions[i])}"


class Problem(NamedTuple):
    """Why a record is invalid: a reason, the field at fault ("image" or "label") and details."""

    reason: str
    field: str
    details: dict[str, Any]


def reject(reason: str, position: str, key: str, **details: Any) -> dict[str, Any]:
    """One line of `rejects.jsonl` for an invalid record."""
    return {"reason": reason, "kind": "invalid", "position": position, "record": {"key": key, **details}}


def check_chunk(images: np.ndarray, labels: np.ndarray, layout: RecordLayout) -> list[Problem | None]:
    """The problem of each record (None when it is valid), the first found: image, then label.

    Regular arrays are checked at once; object arrays (ragged data) record by record.
    """
    if images.dtype == object:
        problems = [_image_problem(images[i], layout) for i in range(len(labels))]
    elif images.shape[1:] != layout.image_shape or images.dtype != np.dtype(layout.image_dtype):
        # Every image of a regular array has the same (wrong) shape or dtype.
        problems = [_image_problem(images[i], layout) for i in range(len(labels))]
    else:
        problems = [None] * len(labels)
    for i, problem in enumerate(problems):
        if problem is not None:
            problem.details["label"] = _describe(labels[i])

    if labels.dtype.kind in "iu" and labels.ndim == 1:
        suspects = np.flatnonzero((labels < layout.label_min) | (labels > layout.label_max))
    else:
        suspects = range(len(labels))
    for i in suspects:
        if problems[i] is None:
            problems[i] = _label_problem(labels[i], layout, images[i])
    return problems


def _image_problem(image: Any, layout: RecordLayout) -> Problem | None:
    try:
        array = np.asarray(image)
    except ValueError:  # A ragged nested list.
        return Problem(
            "wrong_image_shape", "image", {"image": type(image).__name__, "expected_shape": list(layout.image_shape)}
        )
    details = {"image_shape": list(array.shape), "image_dtype": str(array.dtype)}
    details.update(expected_shape=list(layout.image_shape), expected_dtype=layout.image_dtype)
    if array.shape != layout.image_shape:
        return Problem("wrong_image_shape", "image", details)
    if array.dtype != np.dtype(layout.image_dtype):
        return Problem("wrong_image_dtype", "image", details)
    return None


def _label_problem(label: Any, layout: RecordLayout, image: Any) -> Problem | None:
    details = {"label": _describe(label), "image_shape": list(np.shape(image))}
    if isinstance(label, bool | np.bool_) or not isinstance(label, int | np.integer):
        return Problem("label_not_integer", "label", details)
    if not layout.label_min <= label <= layout.label_max:
        details["label_domain"] = [layout.label_min, layout.label_max]
        return Problem("label_out_of_range", "label", details)
    return None


def _describe(value: Any) -> Any:
    """A small JSON-able description of a value found in a source."""
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or isinstance(value, bool | int | float | str):
        return value if not isinstance(value, str) or len(value) <= 40 else value[:40] + "..."
    if isinstance(value, np.ndarray) and value.size <= 10:
        return value.tolist()
    return {"type": type(value).__name__, "shape": list(np.shape(value))}


class ExampleSerializer:
    """Serialises records as `tf.train.Example`s: image (raw bytes), label (int64) and key (bytes).

    One `Example` message is reused for all records, which saves a third of the time
    that building a new one per record costs.
    """

    def __init__(self) -> None:
        self._example = Example()
        features = self._example.features.feature
        self._image = features["image"].bytes_list.value
        self._label = features["label"].int64_list.value
        self._key = features["key"].bytes_list.value

    def __call__(self, image: bytes, label: int, key: str) -> bytes:
        self._image[:] = [image]
        self._label[:] = [label]
        self._key[:] = [key.encode()]
        return self._example.SerializeToString(deterministic=True)


def split_chunk(
    chunk: Chunk, plan: SplitPlan, layout: RecordLayout
) -> tuple[dict[str, list[int]], list[dict[str, Any]]]:
    """Validates a chunk and assigns its valid records to splits.

    Returns the indices (in the source split) of the valid records by split, and the
    rejects of the invalid ones.
    """
    by_split: dict[str, list[int]] = {}
    rejects = []
    for i, problem in enumerate(check_chunk(chunk.images, chunk.labels, layout)):
        index = chunk.start + i
        key = record_key(chunk.source_split, index)
        if problem is None:
            by_split.setdefault(plan.assign(chunk.source_split, key), []).append(index)
        else:
            origin = chunk.image_origin if problem.field == "image" else chunk.label_origin
            rejects.append(reject(problem.reason, chunk.position(i, origin), key, **problem.details))
    return by_split, rejects


def serialize_records(
    source_split: str, indices: list[int], images: np.ndarray, labels: np.ndarray, start: int = 0
) -> list[tuple[str, bytes]]:
    """The (key, serialized Example) of the valid records `indices` of a source split, whose records
    from `start` on are in `images` and `labels`."""
    serialize = ExampleSerializer()
    # A contiguous (n, pixels) view makes `tobytes()` per record cheap; object arrays go record by record.
    flat_images = images.reshape(len(images), -1) if images.dtype != object and len(images) else None
    records = []
    for index in indices:
        key = record_key(source_split, index)
        at = index - start
        image = flat_images[at] if flat_images is not None else np.asarray(images[at]).reshape(-1)
        records.append((key, serialize(image.tobytes(), int(labels[at]), key)))
    return records
