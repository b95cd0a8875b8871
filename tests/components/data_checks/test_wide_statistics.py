"""A wide split's statistics folded column by column (statistics_gen/wide_batch.py) are those of the record-by-record
fold: real wide records (scikit-learn's digits, 64 scalar pixel features, and breast cancer's 30 float features) with
what sources hold beside them (missing features, a multi-valued feature, a text feature, a feature first seen late,
one present with no value, one stored as two kinds of list), folded both ways and compared figure by figure."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf
from sklearn.datasets import load_breast_cancer, load_digits

from kflow.components.statistics_gen import statistics, wide_batch
from kflow.components.statistics_gen.statistics import SplitAccumulator
from kflow.components.util.statistics_proto import feature_stats


def feature(values) -> tf.train.Feature:
    if values and isinstance(values[0], bytes):
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=values))
    if values and isinstance(values[0], float):
        return tf.train.Feature(float_list=tf.train.FloatList(value=values))
    return tf.train.Feature(int64_list=tf.train.Int64List(value=values))


def records(count: int = 3000) -> list[bytes]:
    digits, cancer = load_digits(), load_breast_cancer()
    out = []
    for index in range(count):
        image, measures = digits.data[index % len(digits.data)], cancer.data[index % len(cancer.data)]
        row = {f"pixel{at}": feature([int(value)]) for at, value in enumerate(image) if (index + at) % 9}
        row |= {name: feature([float(value)]) for name, value in zip(cancer.feature_names, measures, strict=True)}
        row["note"] = feature([[b"benign", b"malignant", b"see file"][index % 3]])
        row["strokes"] = feature([int(value) for value in image[: 1 + index % 4]])  # 1 to 4 values a record
        if index >= 2500:
            row["late"] = feature([float(index)])  # a feature first seen in a later batch
        out.append(tf.train.Example(features=tf.train.Features(feature=row)).SerializeToString())
    return out


def folded(data: list[bytes], wide: bool) -> dict:
    with pytest.MonkeyPatch.context() as patch:  # 1,024 records of 97 features: wide from 50,000 values here
        patch.setattr(wide_batch, "WIDE_VALUES", 50_000 if wide else 10**12)
        accumulator = SplitAccumulator()
        for record in data:
            accumulator.add(record)
        return feature_stats(accumulator.to_proto("train"))


def same(wide, one_by_one) -> None:
    assert set(wide) == set(one_by_one)
    for name, expected in one_by_one.items():
        got = wide[name]
        if expected.HasField("num_stats"):
            got, expected = got.num_stats, expected.num_stats
            assert got.common_stats == expected.common_stats, name
            assert (got.min, got.max, got.median, got.num_zeros) == (expected.min, expected.max, expected.median,
                                                                     expected.num_zeros), name  # fmt: skip
            assert got.mean == pytest.approx(expected.mean, rel=1e-12, abs=1e-12), name
            assert got.std_dev == pytest.approx(expected.std_dev, rel=1e-9, abs=1e-9), name
            assert got.histograms == expected.histograms, name
        else:
            assert got == expected, name


def test_a_wide_split_folded_column_by_column_has_the_statistics_of_the_record_by_record_fold():
    data = records()
    with pytest.MonkeyPatch.context() as patch:  # count the batches folded column by column
        calls = []
        original = wide_batch.fold_batch
        patch.setattr(statistics, "fold_batch", lambda *args: calls.append(original(*args)) or calls[-1])
        wide = folded(data, wide=True)
    assert sum(calls) >= 2 and not all(calls)  # most batches at once; the first and the late feature's by record
    same(wide, folded(data, wide=False))
    assert wide["late"].num_stats.common_stats.num_non_missing == 500


def test_a_feature_present_without_a_value_or_of_two_kinds_is_folded_record_by_record():
    data = records(2200)
    empty = {"pixel3": tf.train.Feature(int64_list=tf.train.Int64List(value=[]))}
    data[1500] = tf.train.Example(features=tf.train.Features(feature=empty)).SerializeToString()
    same(folded(data, wide=True), folded(data, wide=False))
    data[1600] = tf.train.Example(features=tf.train.Features(feature={"pixel3": feature([1.5])})).SerializeToString()
    with pytest.raises(ValueError, match="feature 'pixel3' holds float_list in one record and int64_list in another"):
        folded(data, wide=True)
    assert np.isfinite(folded(records(100), wide=True)["mean radius"].num_stats.mean)
