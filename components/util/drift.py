"""Drift between two sets of feature statistics, with TFDV's comparators as the reference.

    categorical (string) features   L-infinity distance: the largest difference, over the values, between the
                                    share of values each side gives it (0: the same shares; 1: disjoint)
    numeric features                approximate Jensen-Shannon divergence (base 2, 0 to 1) of the two
                                    histograms, both spread over the union of their bucket boundaries

The approximation is TFDV's: each side's histogram is re-bucketed onto the boundaries of both, a bucket's count
spread evenly over its width (a bucket of no width, one repeated value, stays a point), and the divergence taken
between the two re-bucketed distributions. StatisticsGen writes 10 quantile buckets a numeric feature.

A small sample is far from its population by chance alone: 30 rows drawn from the training data itself gave
divergences of 0.10-0.23 (10 quantile buckets of a normal variable: 0.23 in 1 draw of 100; 0.10 at 300 rows; whole
numbers with ties, 0.40 at 30 rows and 0.19 at 1,000), past the 0.1 threshold, and a helper's 30 rows of a table's
own file were 22 of 32 features "skewed". So each distance is also compared with its sampling noise: the divergence
(or L-infinity distance) that NOISE_TRIALS samples of the new side's size, drawn from the previous side's
distribution, reach at their 95th percentile, of the family of features compared (Bonferroni's 1 - 0.05 / features:
each feature a test), `noise`; a feature drifts only past both the threshold and its noise.
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
    noise: float = 0.0  # what samples of the new side's size from the previous side's distribution reach by chance
    recased: tuple[str, str] | None = None  # a string's values otherwise only by case: (one now, its spelling before)

    @property
    def drifted(self) -> bool:
        return self.distance > max(self.threshold, self.noise)

    def describe(self) -> str:
        at = f" (value {self.where!r})" if self.where else ""
        name = "L-infinity distance" if self.comparator == "l_infinity" else "Jensen-Shannon divergence"
        noise = f", above its sampling noise {self.noise:.3f}" if self.noise > self.threshold else ""
        # A category written in another case by a newer export (male, Male): kflow keeps them apart (K and k may
        # differ), so the drift is likely a spelling, worth saying as such.
        case = (
            f"; its values differ only by case ({self.recased[0]!r} now, {self.recased[1]!r} before)"
            if self.recased
            else ""
        )
        return f"{name} {self.distance:.3f}{at} > {self.threshold:g}{noise}{case}"

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
    names = sorted(set(new_features) & set(old_features))
    # Each feature a test: of 10 features, one would pass its own 95th percentile by chance in 4 comparisons of 10
    # (a user trial: 30 of diamonds' own rows, `table` 0.280 past its noise 0.277). The quantile is the family's.
    quantile = 1 - NOISE_FAMILY_RISK / max(len(names), 1)
    for name in names:
        mine, theirs = new_features[name], old_features[name]
        if mine.HasField("string_stats") and theirs.HasField("string_stats"):
            counts, reference = value_counts(mine), value_counts(theirs)
            distance, value = l_infinity(counts, reference)
            size = sum(counts.values())
            noise = l_infinity_noise(reference, size, _rng(name), quantile) if distance > l_infinity_threshold else 0
            found.append(FeatureDrift(name, "l_infinity", distance, l_infinity_threshold, value, noise,
                                      _recased(counts, reference)))  # fmt: skip
        elif mine.HasField("num_stats") and theirs.HasField("num_stats"):
            buckets, reference = histogram(mine), histogram(theirs)
            distance = jensen_shannon(buckets, reference)
            size = round(sum(count for _, _, count in buckets))
            too_far = distance > jensen_shannon_threshold
            noise = jensen_shannon_noise(reference, size, _rng(name), quantile) if too_far else 0
            found.append(FeatureDrift(name, "jensen_shannon", distance, jensen_shannon_threshold, noise=noise))
    return found


def _recased(counts: dict[str, int], reference: dict[str, int]) -> tuple[str, str] | None:
    """(a value now, the same before in another case) when the two sides' values are the same but for case."""
    if set(counts) == set(reference) or {v.lower() for v in counts} != {v.lower() for v in reference}:
        return None
    before = {value.lower(): value for value in reference}
    now = next(value for value in sorted(counts) if value not in reference)
    return now, before[now.lower()]


NOISE_TRIALS = 200  # drawn only for a feature past its threshold; the highest quantile read is their largest
NOISE_FAMILY_RISK = 0.05  # the chance that any feature of a comparison is said drifted by sampling alone (Bonferroni)
NOISE_MAX_SIZE = 20_000  # samples larger than this are simulated at this size (their noise is smaller still)
# The 99th percentile of the divergence of samples of 10 and 30 values of a normal, an exponential and a two-peaked
# variable from their population's histogram (300 samples each; this module's functions on numpy draws, 2026-11-30),
# times the square root of the size: 1.17-1.32. From 170 values on it is below the default threshold, 0.1.
SHAPE_NOISE = 1.3


def _rng(name: str) -> Any:
    """A generator seeded by the feature's name: the same comparison gives the same noise on every run."""
    import zlib

    import numpy as np

    return np.random.default_rng(zlib.crc32(name.encode("utf-8")))


def jensen_shannon_noise(reference: list[Bucket], size: int, rng: Any, quantile: float = 0.95) -> float:
    """The divergence from `reference` of the 10-quantile histograms (as StatisticsGen writes them) of samples of
    `size` values drawn from it (uniform within a bucket, whole where its edges all are: ties as whole numbers have
    them), at its `quantile` over NOISE_TRIALS samples; 0 without a sample to draw."""
    import numpy as np

    buckets = [(low, high, count) for low, high, count in reference if count > 0]
    if size < 1 or not buckets or not all(math.isfinite(edge) for low, high, _ in buckets for edge in (low, high)):
        return 0.0
    size = min(size, NOISE_MAX_SIZE)
    lows, highs = np.array([b[0] for b in buckets]), np.array([b[1] for b in buckets])
    weights = np.array([b[2] for b in buckets], np.float64)
    whole = bool(np.all(lows == np.round(lows)) and np.all(highs == np.round(highs)))
    chosen = rng.choice(len(buckets), size=(NOISE_TRIALS, size), p=weights / weights.sum())
    values = lows[chosen] + (highs[chosen] - lows[chosen]) * rng.random((NOISE_TRIALS, size))
    if whole:
        values = np.floor(values + rng.random(values.shape))  # a whole number of the bucket, its edges included
    edges = np.quantile(values, np.linspace(0, 1, 11), axis=1).T  # [trial, 11], linear as StatisticsGen's
    divergences = [
        jensen_shannon([(float(row[i]), float(row[i + 1]), size / 10) for i in range(10)], reference) for row in edges
    ]
    # Drawn so, a sample is the histogram's own shape; a real one is not (its tails are not flat within the outer
    # buckets, whose edges are its extremes), and lies further: at least SHAPE_NOISE / √size (fitted below).
    return max(float(np.quantile(divergences, quantile)), SHAPE_NOISE / size**0.5)


def l_infinity_noise(reference: dict[str, int], size: int, rng: Any, quantile: float = 0.95) -> float:
    """The L-infinity distance from `reference`'s shares of samples of `size` values drawn with those shares, at its
    `quantile` over NOISE_TRIALS samples."""
    import numpy as np

    total = sum(reference.values())
    if size < 1 or not total:
        return 0.0
    shares = np.array(list(reference.values()), np.float64) / total
    drawn = rng.multinomial(min(size, NOISE_MAX_SIZE), shares, size=NOISE_TRIALS) / min(size, NOISE_MAX_SIZE)
    return float(np.quantile(np.abs(drawn - shares).max(axis=1), quantile))
