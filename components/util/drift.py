"""Drift between two sets of feature statistics, with TFDV's comparators as the reference.

    categorical (string) features   L-infinity distance: the largest difference, over the values, between the
                                    share of values each side gives it (0: the same shares; 1: disjoint)
    numeric features                approximate Jensen-Shannon divergence (base 2, 0 to 1) of the two
                                    histograms, both spread over the union of their bucket boundaries

The approximation is TFDV's: each side's histogram is re-bucketed onto the boundaries of both, a bucket's count
spread evenly over its width (a bucket of no width, one repeated value, stays a point), and the divergence taken
between the two re-bucketed distributions. StatisticsGen writes 10 quantile buckets a numeric feature.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from kflow.components.util.statistics_proto import feature_stats, value_counts


@dataclass(frozen=True)
class FeatureDrift:
    feature: str
    comparator: str  # l_infinity | jensen_shannon
    distance: float
    threshold: float
    where: str = ""  # L-infinity: the value whose share moved most

    @property
    def drifted(self) -> bool:
        return self.distance > self.threshold

    def describe(self) -> str:
        at = f" (value {self.where!r})" if self.where else ""
        name = "L-infinity distance" if self.comparator == "l_infinity" else "Jensen-Shannon divergence"
        return f"{name} {self.distance:.3f}{at} > {self.threshold:g}"

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "drifted": self.drifted}


def l_infinity(counts: dict[str, int], other: dict[str, int]) -> tuple[float, str]:
    """The largest difference between the two normalised value distributions, and the value where it is."""
    total, other_total = sum(counts.values()) or 1, sum(other.values()) or 1
    differences = {
        value: abs(counts.get(value, 0) / total - other.get(value, 0) / other_total) for value in {*counts, *other}
    }
    if not differences:
        return 0.0, ""
    value = max(sorted(differences), key=differences.__getitem__)
    return differences[value], value


Bucket = tuple[float, float, float]  # (low, high, count)


def _rebucket(buckets: list[Bucket], edges: list[float]) -> list[float]:
    """The buckets' counts over the points `edges` and the intervals between them: [point 0, (0,1), point 1, …]."""
    masses = [0.0] * (2 * len(edges) - 1)
    for low, high, count in buckets:
        if count <= 0:
            continue
        if high <= low:
            masses[2 * edges.index(low)] += count
            continue
        width = high - low
        for index in range(edges.index(low), edges.index(high)):
            masses[2 * index + 1] += count * (edges[index + 1] - edges[index]) / width
    return masses


def jensen_shannon(buckets: list[Bucket], other: list[Bucket]) -> float:
    """The approximate Jensen-Shannon divergence (base 2) of two histograms; 0 when either is empty."""
    edges = sorted({value for low, high, _ in [*buckets, *other] for value in (low, high)})
    if not edges:
        return 0.0
    p, q = _rebucket(buckets, edges), _rebucket(other, edges)
    p_total, q_total = sum(p), sum(q)
    if not p_total or not q_total:
        return 0.0
    divergence = 0.0
    for p_mass, q_mass in zip(p, q, strict=True):
        p_share, q_share = p_mass / p_total, q_mass / q_total
        middle = (p_share + q_share) / 2
        if p_share:
            divergence += 0.5 * p_share * math.log2(p_share / middle)
        if q_share:
            divergence += 0.5 * q_share * math.log2(q_share / middle)
    return min(max(divergence, 0.0), 1.0)


def histogram(feature: Any) -> list[Bucket]:
    """A numeric feature's first histogram (StatisticsGen's quantiles) as (low, high, count) buckets."""
    histograms = feature.num_stats.histograms
    if not histograms:
        return []
    return [(bucket.low_value, bucket.high_value, bucket.sample_count) for bucket in histograms[0].buckets]


def compare(
    new: Any, previous: Any, *, l_infinity_threshold: float, jensen_shannon_threshold: float
) -> list[FeatureDrift]:
    """Every feature both `DatasetFeatureStatistics` hold, compared: strings by L-infinity, numbers by
    Jensen-Shannon. Features whose type differs between the two are the validator's type_mismatch, not drift."""
    found = []
    new_features, old_features = feature_stats(new), feature_stats(previous)
    for name in sorted(set(new_features) & set(old_features)):
        mine, theirs = new_features[name], old_features[name]
        if mine.HasField("string_stats") and theirs.HasField("string_stats"):
            distance, value = l_infinity(value_counts(mine), value_counts(theirs))
            found.append(FeatureDrift(name, "l_infinity", distance, l_infinity_threshold, value))
        elif mine.HasField("num_stats") and theirs.HasField("num_stats"):
            distance = jensen_shannon(histogram(mine), histogram(theirs))
            found.append(FeatureDrift(name, "jensen_shannon", distance, jensen_shannon_threshold))
    return found
