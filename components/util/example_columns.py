"""Serialized tf.train.Examples read column by column by TensorFlow's `parse_example`, in C++: the one reading of a
wide batch that StatisticsGen (statistics_gen/wide_batch.py) and the Transform's analyzers (transform/wide_parse.py)
share where a Python loop over every record's features costs 1-2 µs a value."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np


class Column(NamedTuple):
    """A feature's values in a batch, in record order: `rows` the record of each value, `places` its place in
    that record's list."""

    values: np.ndarray
    rows: np.ndarray
    places: np.ndarray


def sparse_columns(records: Sequence[bytes], kinds: dict[str, str]) -> dict[str, Column] | None:
    """{feature: its Column} of `kinds` {feature: "int64_list" | "float_list" | "bytes_list"}, or None where a record
    stores another kind of list for one of them (parse_example refuses it). TensorFlow is imported here only: a worker
    that never reads a wide batch does not load it."""
    import tensorflow as tf

    dtypes = {"int64_list": tf.int64, "float_list": tf.float32, "bytes_list": tf.string}
    spec = {name: tf.io.VarLenFeature(dtypes[kind]) for name, kind in kinds.items()}
    if not spec:
        return {}
    try:
        parsed = tf.io.parse_example(tf.constant(list(records)), spec)
    except tf.errors.InvalidArgumentError:
        return None
    columns = {}
    for name, sparse in parsed.items():
        indices = sparse.indices.numpy()
        rows, places = (indices[:, 0], indices[:, 1]) if len(indices) else (np.empty(0, int), np.empty(0, int))
        columns[name] = Column(sparse.values.numpy(), rows, places)
    return columns
