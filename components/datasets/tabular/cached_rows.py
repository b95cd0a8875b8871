"""A table's training rows parsed once and kept in memory, for every epoch after the first.

A tabular Example holds one feature a column, and `tf.io.parse_example` costs per column: at 784 float columns
(the width of MNIST written as a CSV) a batch of 32 parsed and fed as a dict took 14.7 ms a step of a small MLP on
this project's 2-core VM, and 2.7 ms kept parsed (16 steps a call). Kept parsed, an epoch after the first only
shuffles and batches rows. So that shuffling rows costs little whatever the width, each batch's columns are packed
by type first (the numbers, all float32 [batch, 1], in one [batch, numbers] tensor; the strings in one [batch,
strings]), cached and shuffled as rows, then unpacked into the model's inputs again after batching: the model and
what it is served are unchanged.

Used for the train split when it surely fits in `MAX_CACHED_BYTES`: its rows times its columns at 8 bytes a value,
and its files' compressed size times GZIP_BOUND (long strings: a text column of reviews is much more than 8 bytes a
value); a larger split is read from its files every epoch, as before.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import tensorflow as tf

MAX_CACHED_BYTES = 2 << 30  # 2 GiB of parsed rows at most; beyond, stream the files each epoch
BYTES_A_VALUE = 8
GZIP_BOUND = 20  # parsed rows take at most this many times their GZIP'd Examples (text compresses 3-10x)
PARSE_BATCH = 1024  # rows parsed a call: parse_example's cost per call is shared by more rows


def fits_in_memory(rows: int | None, columns: int, files: Sequence[str]) -> bool:
    """Whether the parsed rows of a split of `rows` records of `columns` columns in `files` (GZIP'd) surely fit."""
    if rows is None:
        return False
    stored = sum(tf.io.gfile.stat(path).length for path in files)
    return max(rows * max(columns, 1) * BYTES_A_VALUE, stored * GZIP_BOUND) <= MAX_CACHED_BYTES


def cached_rows(
    records: tf.data.Dataset,
    parse: Callable[[tf.Tensor], tuple[dict[str, tf.Tensor], tf.Tensor]],
    *,
    batch_size: int,
    shuffle_buffer: int,
    seed: int,
    drop_remainder: bool,
) -> tf.data.Dataset:
    """Batches of `parse`d (features, label) from serialized `records`, parsed on the first pass only, the rows
    shuffled each pass when `shuffle_buffer` is set."""
    parsed = records.batch(PARSE_BATCH).map(parse, num_parallel_calls=tf.data.AUTOTUNE)
    features, _ = parsed.element_spec
    packing = Packing(features)
    rows = parsed.map(packing.pack, num_parallel_calls=tf.data.AUTOTUNE).unbatch().cache()
    if shuffle_buffer > 0:
        rows = rows.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True)
    return rows.batch(batch_size, drop_remainder=drop_remainder).map(packing.unpack)


class Packing:
    """The features of a parsed batch, `{name: [batch, 1]}`, as one [batch, k] tensor a dtype, and back."""

    def __init__(self, spec: dict[str, tf.TensorSpec]):
        self.groups: dict[tf.DType, list[str]] = {}
        for name, tensor in spec.items():
            if tensor.shape.rank != 2 or tensor.shape[1] != 1:
                raise ValueError(f"feature {name!r}: only [batch, 1] features pack, got {tensor.shape}")
            self.groups.setdefault(tensor.dtype, []).append(name)

    def pack(self, features: dict[str, tf.Tensor], label: tf.Tensor) -> tuple[tuple[tf.Tensor, ...], Any]:
        return tuple(tf.concat([features[name] for name in names], axis=1) for names in self.groups.values()), label

    def unpack(self, packed: tuple[tf.Tensor, ...], label: tf.Tensor) -> tuple[dict[str, tf.Tensor], tf.Tensor]:
        features: dict[str, tf.Tensor] = {}
        for names, block in zip(self.groups.values(), packed, strict=True):
            features.update(zip(names, tf.split(block, len(names), axis=1), strict=True))
        return features, label
