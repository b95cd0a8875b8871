"""Reading the statistics StatisticsGen writes (TFMD `DatasetFeatureStatisticsList`, one per split)."""

from __future__ import annotations

from typing import Any

from tensorflow_metadata.proto.v0 import statistics_pb2

from kflow.pipeline.dsl.artifacts import ExampleStatistics


def read_split(statistics: ExampleStatistics, split: str) -> statistics_pb2.DatasetFeatureStatistics:
    """One split's statistics (the first dataset of its DatasetFeatureStatisticsList)."""
    path = statistics.split_file(split)
    if not path.exists():
        raise FileNotFoundError(f"no statistics for split {split!r} at {path} (splits: {statistics.splits})")
    (dataset,) = statistics_pb2.DatasetFeatureStatisticsList.FromString(path.read_bytes()).datasets
    return dataset


def feature_stats(dataset: statistics_pb2.DatasetFeatureStatistics) -> dict[str, Any]:
    """{feature name: FeatureNameStatistics} of one split."""
    return {(feature.path.step[0] if feature.path.step else feature.name): feature for feature in dataset.features}


def value_counts(feature: Any) -> dict[str, int]:
    """A string feature's value counts, from its rank histogram."""
    return {bucket.label: int(bucket.sample_count) for bucket in feature.string_stats.rank_histogram.buckets}


def common_stats(feature: Any) -> Any:
    return feature.string_stats.common_stats if feature.HasField("string_stats") else feature.num_stats.common_stats
