"""Numbers folded by numpy every FOLD_EVERY values (statistics.py): the same figures as value by value, past the
fold and the quantiles' sample size. scikit-learn's real handwritten digits: 1,797 records of 64 pixel values,
one multi-valued int feature (115,008 values) and one scalar float feature each."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
import tensorflow as tf
from sklearn.datasets import load_digits

from kflow.components.statistics_gen import statistics
from kflow.components.statistics_gen.statistics import SplitAccumulator
from kflow.components.util.statistics_proto import feature_stats


def records() -> list[bytes]:
    digits = load_digits()
    out = []
    for pixels, target in zip(digits.data.astype(int), digits.target, strict=True):
        feature = {
            "pixels": tf.train.Feature(int64_list=tf.train.Int64List(value=pixels.tolist())),
            "ink": tf.train.Feature(float_list=tf.train.FloatList(value=[float(pixels.mean())])),
            "digit": tf.train.Feature(bytes_list=tf.train.BytesList(value=[str(target).encode()])),
        }
        out.append(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
    return out


def test_folded_numbers_give_numpys_moments_and_the_sample_of_the_smallest_keys():
    data = records()
    assert len(data) * 64 > max(statistics.FOLD_EVERY, statistics.SAMPLE_SIZE)
    whole = SplitAccumulator()
    for record in data:
        whole.add(record)
    stats = feature_stats(whole.to_proto("train"))
    pixels = load_digits().data.ravel()
    num = stats["pixels"].num_stats
    assert (num.mean, num.std_dev) == (pytest.approx(pixels.mean()), pytest.approx(pixels.std()))
    assert (num.min, num.max, num.num_zeros) == (0, 16, int(np.count_nonzero(pixels == 0)))
    assert num.common_stats.tot_num_values == pixels.size and num.common_stats.min_num_values == 64
    # The sample, value by value: each value keyed by its record's hash plus its index, the smallest kept.
    keyed = []
    for record in data:
        digest = int.from_bytes(hashlib.blake2b(record, digest_size=8).digest(), "big")
        values = tf.train.Example.FromString(record).features.feature["pixels"].int64_list.value
        keyed += [((digest + index) % 2**64, float(value)) for index, value in enumerate(values)]
    sample = sorted(value for _, value in sorted(keyed)[: statistics.SAMPLE_SIZE])
    assert num.median == pytest.approx(float(np.quantile(sample, 0.5)))
    bounds = [bucket.high_value for bucket in num.histograms[0].buckets]
    assert bounds == pytest.approx([float(np.quantile(sample, (i + 1) / 10)) for i in range(10)])
    assert stats["digit"].string_stats.unique == 10

    # Split over three workers and merged: the same figures (sums in another order).
    parts = [SplitAccumulator() for _ in range(3)]
    for index, record in enumerate(data):
        parts[index % 3].add(record)
    merged = parts[0].merge(parts[1]).merge(parts[2])
    again = feature_stats(merged.to_proto("train"))["pixels"].num_stats
    assert (again.mean, again.median, again.num_zeros) == (pytest.approx(num.mean), num.median, num.num_zeros)
    assert [b.high_value for b in again.histograms[0].buckets] == bounds
