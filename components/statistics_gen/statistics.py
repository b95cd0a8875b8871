"""Feature statistics of serialized tf.train.Examples, as a mergeable accumulator and a TFMD proto.

One accumulator per split, built record by record (`add`) and merged across Beam workers
(`merge`); `to_proto` writes a `DatasetFeatureStatistics` the way TFDV does: common stats
(present, missing, values per example), numeric stats (mean, standard deviation, zeros, min,
median, max, a 10-bucket quantiles histogram) and string stats (unique values, the top 20,
average length, and a rank histogram of the most frequent values, which ExampleValidator reads
as the split's value distribution).

Quantiles come from a deterministic sample: the SAMPLE_SIZE values whose records have the
smallest hashes, so they are exact up to that many values and the same on every run and
runner. Numbers are buffered as they come and folded by numpy every FOLD_EVERY values a feature
(value by value in Python, MNIST's 784 pixel columns as a CSV took 123 s). String counts are
exact up to MAX_DISTINCT distinct values a feature; beyond that the least frequent are dropped
(unique becomes a lower bound, marked in the feature's name of the rank histogram: "truncated").
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from tensorflow_metadata.proto.v0 import statistics_pb2

from kflow.components.statistics_gen.wide_batch import fold_batch
from kflow.components.util.example_proto import Example

SAMPLE_SIZE = 10_000
FOLD_EVERY = 4_096  # numbers buffered a feature before numpy folds them into the moments and the sample
MAX_DISTINCT = 100_000
BATCH_RECORDS = 1_024  # records folded together (a wide batch column by column: wide_batch.py)
FIRST_RECORDS = 64  # records folded one by one first, which tell the split's features
TOP_VALUES = 20
RANK_BUCKETS = 1_000
_TYPES = {"int64_list": statistics_pb2.FeatureNameStatistics.INT,
          "float_list": statistics_pb2.FeatureNameStatistics.FLOAT,
          "bytes_list": statistics_pb2.FeatureNameStatistics.STRING}  # fmt: skip


@dataclass
class FeatureAccumulator:
    kind: str  # int64_list | float_list | bytes_list
    present: int = 0
    values: int = 0
    min_values: int = math.inf
    max_values: int = 0
    # Numbers
    total: float = 0.0
    squares: float = 0.0
    zeros: int = 0
    low: float = math.inf
    high: float = -math.inf
    # The quantiles' sample: the SAMPLE_SIZE values of the smallest (record hash + index), ties by value.
    sample_keys: np.ndarray = field(default_factory=lambda: np.empty(0, np.uint64))
    sample_values: np.ndarray = field(default_factory=lambda: np.empty(0, np.float64))
    pending: list = field(default_factory=list)  # numbers not folded yet, and their keys
    pending_keys: list = field(default_factory=list)
    # Strings
    counts: Counter = field(default_factory=Counter)
    length: int = 0
    truncated: bool = False

    def add(self, values: list, record_hash: int) -> None:
        count = len(values)
        self.present += 1
        self.values += count
        if count < self.min_values:
            self.min_values = count
        if count > self.max_values:
            self.max_values = count
        if self.kind == "bytes_list":
            self.counts.update(values)
            self.length += sum(len(value) for value in values)
            if len(self.counts) > 2 * MAX_DISTINCT:
                self._prune()
            return
        self.pending.extend(values)
        self.pending_keys.extend(_keys(record_hash, count))
        if len(self.pending) >= FOLD_EVERY:
            self.fold()

    def add_column(self, values: np.ndarray, rows: np.ndarray, places: np.ndarray, keys: np.ndarray) -> None:
        """A batch's values of this feature at once (wide_batch.py): `rows` the record of each value (in record
        order), `places` its place in that record's list, `keys` the batch's record hashes."""
        counts = np.bincount(rows)
        counts = counts[counts > 0]
        self.present += len(counts)
        self.values += len(values)
        self.min_values = min(self.min_values, int(counts.min()))
        self.max_values = max(self.max_values, int(counts.max()))
        if self.kind == "bytes_list":
            strings = values.tolist()
            self.counts.update(strings)
            self.length += sum(map(len, strings))
            if len(self.counts) > 2 * MAX_DISTINCT:
                self._prune()
            return
        self.fold()
        self._fold(values.astype(np.float64), keys[rows] + places.astype(np.uint64))  # wraps as _keys does

    def fold(self) -> None:
        """Folds the buffered numbers into the moments, the range and the sample."""
        if not self.pending:
            return
        self._fold(np.asarray(self.pending, dtype=np.float64), np.asarray(self.pending_keys, dtype=np.uint64))
        self.pending, self.pending_keys = [], []

    def _fold(self, values: np.ndarray, keys: np.ndarray) -> None:
        self.total += float(values.sum())
        self.squares += float(np.dot(values, values))
        self.zeros += int(np.count_nonzero(values == 0))
        compared = values[~np.isnan(values)]  # a NaN (a TFRecord source's) is no bound of the range
        if compared.size:
            self.low, self.high = min(self.low, float(compared.min())), max(self.high, float(compared.max()))
        self._sample(keys, values)

    def _sample(self, keys: np.ndarray, values: np.ndarray) -> None:
        keys, values = np.concatenate([self.sample_keys, keys]), np.concatenate([self.sample_values, values])
        if len(keys) > SAMPLE_SIZE:
            kept = np.lexsort((values, keys))[:SAMPLE_SIZE]
            keys, values = keys[kept], values[kept]
        self.sample_keys, self.sample_values = keys, values

    def merge(self, other: FeatureAccumulator) -> None:
        if other.kind != self.kind:
            raise ValueError(f"a feature holds both {self.kind} and {other.kind} values")
        self.fold()
        other.fold()
        self.present += other.present
        self.values += other.values
        self.min_values = min(self.min_values, other.min_values)
        self.max_values = max(self.max_values, other.max_values)
        self.total += other.total
        self.squares += other.squares
        self.zeros += other.zeros
        self.low, self.high = min(self.low, other.low), max(self.high, other.high)
        self._sample(other.sample_keys, other.sample_values)
        self.counts.update(other.counts)
        self.length += other.length
        self.truncated |= other.truncated
        if len(self.counts) > 2 * MAX_DISTINCT:
            self._prune()

    def _prune(self) -> None:
        self.counts = Counter(dict(_ranked(self.counts)[:MAX_DISTINCT]))
        self.truncated = True


@dataclass
class SplitAccumulator:
    examples: int = 0
    features: dict[str, FeatureAccumulator] = field(default_factory=dict)
    batch: list = field(default_factory=list)  # records not folded yet: BATCH_RECORDS at a time (wide_batch.py)

    def add(self, serialized: bytes) -> None:
        self.batch.append(serialized)
        if len(self.batch) >= (BATCH_RECORDS if self.features else FIRST_RECORDS):
            self._fold_batch()

    def _fold_batch(self) -> None:
        """Folds the batched records: column by column where they are wide and hold the known features only
        (wide_batch.fold_batch), else record by record."""
        batch, self.batch = self.batch, []
        hashes = [int.from_bytes(hashlib.blake2b(record, digest_size=8).digest(), "big") for record in batch]
        if fold_batch(self.features, batch, hashes):
            self.examples += len(batch)
            return
        for record, record_hash in zip(batch, hashes, strict=True):
            self._add_one(record, record_hash)

    def _add_one(self, serialized: bytes, record_hash: int) -> None:
        example = Example.FromString(serialized)
        self.examples += 1
        for name, feature in example.features.feature.items():
            kind = feature.WhichOneof("kind")
            if kind is None:
                continue
            accumulator = self.features.get(name)
            if accumulator is None:  # not setdefault: it would build an accumulator a value, wasted
                accumulator = self.features[name] = FeatureAccumulator(kind)
            elif accumulator.kind != kind:
                raise ValueError(f"feature {name!r} holds {kind} in one record and {accumulator.kind} in another")
            accumulator.add(getattr(feature, kind).value, record_hash)

    def merge(self, other: SplitAccumulator) -> SplitAccumulator:
        self._fold_batch()
        other._fold_batch()
        self.examples += other.examples
        for name, accumulator in other.features.items():
            if name in self.features:
                self.features[name].merge(accumulator)
            else:
                self.features[name] = accumulator
        return self

    def fold(self) -> None:
        """Folds the batched records, then every feature's buffered numbers (FeatureAccumulator.fold)."""
        self._fold_batch()
        for accumulator in self.features.values():
            accumulator.fold()

    def to_proto(self, name: str) -> statistics_pb2.DatasetFeatureStatistics:
        self.fold()
        dataset = statistics_pb2.DatasetFeatureStatistics(name=name, num_examples=self.examples)
        for feature_name in sorted(self.features):
            _feature_proto(dataset.features.add(), feature_name, self.features[feature_name], self.examples)
        return dataset


def _feature_proto(out, name: str, acc: FeatureAccumulator, examples: int) -> None:
    out.path.step.append(name)
    out.type = _TYPES[acc.kind]
    common = statistics_pb2.CommonStatistics(
        num_non_missing=acc.present,
        num_missing=examples - acc.present,
        min_num_values=int(acc.min_values) if acc.present else 0,
        max_num_values=acc.max_values,
        avg_num_values=acc.values / acc.present if acc.present else 0.0,
        tot_num_values=acc.values,
    )
    if acc.kind == "bytes_list":
        stats = out.string_stats
        stats.common_stats.CopyFrom(common)
        ranked = _ranked(acc.counts)
        stats.unique = len(ranked)
        stats.avg_length = acc.length / acc.values if acc.values else 0.0
        for value, count in ranked[:TOP_VALUES]:
            stats.top_values.add(value=_text(value), frequency=count)
        stats.rank_histogram.name = "truncated" if acc.truncated else "all values"
        for rank, (value, count) in enumerate(ranked[:RANK_BUCKETS]):
            stats.rank_histogram.buckets.add(low_rank=rank, high_rank=rank, label=_text(value), sample_count=count)
        return
    stats = out.num_stats
    stats.common_stats.CopyFrom(common)
    if not acc.values:
        return
    mean = acc.total / acc.values
    stats.mean = mean
    stats.std_dev = math.sqrt(max(acc.squares / acc.values - mean * mean, 0.0))
    stats.num_zeros = acc.zeros
    stats.min, stats.max = acc.low, acc.high
    sample = np.sort(acc.sample_values).tolist()
    stats.median = _quantile(sample, 0.5)
    histogram = stats.histograms.add(type=statistics_pb2.Histogram.QUANTILES)
    for index in range(10):
        histogram.buckets.add(
            low_value=_quantile(sample, index / 10),
            high_value=_quantile(sample, (index + 1) / 10),
            sample_count=acc.values / 10,
        )


def _keys(record_hash: int, count: int) -> list[int]:
    """The sample keys of a record's `count` values: its hash plus each value's index, within 64 bits."""
    if count == 1:
        return [record_hash]
    return [(record_hash + index) & 0xFFFF_FFFF_FFFF_FFFF for index in range(count)]


def _ranked(counts: Counter) -> list[tuple[Any, int]]:
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


def _quantile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return 0.0
    position = q * (len(sorted_values) - 1)
    low = math.floor(position)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (position - low)


def _text(value: bytes) -> str:
    return value.decode("utf-8", errors="replace")
