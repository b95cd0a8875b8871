"""A wide batch of records folded into a split's statistics column by column, TensorFlow's `parse_example` reading
them in C++, rather than feature by feature in Python.

SplitAccumulator.add reads a record's features in Python, about 1.9 µs a value: MNIST written as a CSV (785
columns, 10,000 records) spent 14.7 s of its StatisticsGen's 16 so. Once the accumulator knows the split's features
(from the records it folded in Python), a batch of at least WIDE_VALUES values is parsed by `parse_example` with
those features' kinds, and each feature's values, records and counts fold into its FeatureAccumulator at once:
the figures the record-by-record fold gives (the sums may differ in their last bits, added in another order). The
batch goes back to the record-by-record fold (`fold_batch` returns False) where it holds anything the known
features do not account for: a feature not seen before, another kind of list, a feature present with no value
(each record's count of features must equal the features `parse_example` found values of in it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from kflow.components.util.example_columns import sparse_columns
from kflow.components.util.example_proto import Example

WIDE_VALUES = 100_000  # records × known features of a batch folded column by column


def fold_batch(features: dict[str, Any], records: Sequence[bytes], hashes: Sequence[int]) -> bool:
    """Folds `records` (their sample `hashes`: statistics._keys' record hashes) into `features` {name:
    FeatureAccumulator} when they are wide and hold only the known features (True), else leaves them (False)."""
    if len(records) * len(features) < WIDE_VALUES:
        return False
    columns = sparse_columns(records, {name: accumulator.kind for name, accumulator in features.items()})
    if columns is None:  # a feature stored as another kind of list
        return False
    found = sum(
        len(rows) if not len(places) or places.max() == 0 else len(np.unique(rows))
        for _, rows, places in columns.values()
    )  # the (record, feature) pairs holding values
    if found != sum(len(Example.FromString(record).features.feature) for record in records):
        return False  # a feature not known yet, or one present without a value: record by record
    keys = np.asarray(hashes, np.uint64)
    for name, (values, rows, places) in columns.items():
        if len(values):
            features[name].add_column(values, rows, places, keys)
    return True
