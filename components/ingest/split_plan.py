"""Where a record goes: its sort key (a stable hash of its key), its split (a quota per group over the sorted
keys, found from a histogram of the hashes without holding the keys), its shard, and how many shards a split
gets."""

from __future__ import annotations

import bisect
import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

SHARD_BYTES = 256 * 2**20  # Serialised Examples per shard when the count is automatic: gzipped files of ~100 MB.
# A split of more than this gets at least a shard per ingest worker, so that the workers write them in parallel.
PARALLEL_SHARD_BYTES = 16 * 2**20
_FIBONACCI, _UINT64 = 0x9E3779B97F4A7C15, (1 << 64) - 1
BUCKET_BITS = 16
# A table of at least this many records is cut by fixed ranges of the hash (TFX ExampleGen's hash buckets): each
# record's split is its own hash's, so it stays in its split as the table grows (a retrain's test split holds none
# of the earlier model's training rows). A smaller table is cut by quota, its splits' shares exact to a record.
STABLE_AT = 500
SortKey = tuple[int, str]


def stable_hash(text: str) -> int:
    """A 64-bit hash of `text` that is the same on every machine and in every process."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def shard_of(hashed: int, count: int) -> int:
    """The shard of a record whose key hashes to `hashed`, among `count`.

    The hash is mixed first (Fibonacci hashing): splits are made from the same hash, by its value modulo
    the buckets (MNIST, Quora, WikiText-2) or by ranges of it (stratified), and a shard taken as the plain
    hash modulo the count would follow the split (a split of the even buckets would fill only even shards).
    """
    return (((hashed * _FIBONACCI) & _UINT64) >> 32) % count


def sort_key_of(key: str) -> SortKey:
    """A record's place in its group: a hash of the key's part before its first "|", then the key (ties)."""
    return stable_hash(key.partition("|")[0]), key


def split_cuts(wanted: dict[str, list[tuple[int, str, int, int]]], keys_at_cuts: list) -> SplitCuts:
    in_bucket: dict[tuple[str, int], list[SortKey]] = {}
    for group, bucket, sort_key in keys_at_cuts:
        in_bucket.setdefault((group, bucket), []).append(sort_key)
    for keys in in_bucket.values():
        keys.sort()
    return SplitCuts(
        {
            group: tuple(
                ((offset, "") if bucket < 0 else in_bucket[(group, bucket)][offset], split)  # bucket -1: a fixed range
                for _, split, bucket, offset in cuts
            )
            for group, cuts in wanted.items()
        }
    )


def shard_counts(
    sizes: dict[str, int], shards: int, splits: Sequence[str], plan: StratifiedPlan | None, workers: int = 1
) -> dict:
    """{split: shard count}: `shards` each, or with `shards=0` one per SHARD_BYTES of the split's Examples, and at
    least one per worker (up to one per PARALLEL_SHARD_BYTES) so that a big split is written in parallel.

    `sizes` are the serialised bytes per group: a split's own without a plan, else the total shared by quota."""
    if shards:
        return dict.fromkeys(splits, shards)
    total = sum(sizes.values())
    if plan is None:
        split_bytes = {split: sizes.get(split, 0) for split in splits}
    else:
        weight = sum(plan.weights.values())
        split_bytes = {split: total * plan.weights.get(split, 0) / weight for split in splits}
    return {
        split: max(1, math.ceil(size / SHARD_BYTES), min(workers, math.ceil(size / PARALLEL_SHARD_BYTES)))
        for split, size in split_bytes.items()
    }


@dataclass(frozen=True)
class StratifiedPlan:
    """Assigns each record to a split: per group (label), by quota over the records ordered by a hash of their key.

    With `stable` (a table's), groups of STABLE_AT records or more in all are each cut by fixed ranges of the hash
    (`fixed_ranges`): a record's split is its hash's alone, whatever the file order and the other records, so it
    keeps its split as the table grows; the splits' sizes are the shares give or take the hash's chance (a binomial
    spread). Else, within a group of n records ordered by `sort_key_of`, the first n·w₁/W go to the first split
    (names sorted), and so on, each rounded down or up so that the splits' totals are the whole's shares to a record
    (`counts`): 5 classes of 3 rows still give eval and test a row; such a record's split depends on the other
    records of its group (a cut moves as the group grows) but not on the file order. A
    key's part before its first "|" is hashed; the rest breaks ties (e.g. the position that makes a repeated
    record's key unique), so equal records stay together.
    """

    weights: dict[str, int]
    # Whether the groups of STABLE_AT records or more in all are cut by fixed hash ranges (tables: data that grows
    # and is retrained on); else by quota (a dataset of fixed size: Quora's sample, an image folder).
    stable: bool = field(default=False, kw_only=True)

    def weights_of(self, group: str) -> dict[str, int]:
        """The shares `group`'s records are cut by: every group's are the same here."""
        return self.weights

    def counts(self, group_counts: dict[str, int]) -> dict[str, dict[str, int]]:
        """{group: {split: records}}: each group cut by its shares, and the records the shares leave over (a group's
        fractions of a record) given so that each split's total is the whole's share to a record (largest
        remainders). Rounding each group alone would leave a split empty when every group is small: 5 classes of 3
        rows, 80/10/10, give each class's first row to test and none to eval; apportioned, eval gets 2 and test 1."""
        ideal = {}
        for group, count in group_counts.items():
            weights = self.weights_of(group)
            total = sum(weights.values())
            ideal[group] = {split: count * weight / total for split, weight in sorted(weights.items()) if weight > 0}
        counts = {
            group: {split: math.floor(share) for split, share in shares.items()} for group, shares in ideal.items()
        }
        splits = sorted({split for shares in ideal.values() for split in shares})
        wanted = _largest_remainders(
            {split: sum(shares.get(split, 0) for shares in ideal.values()) for split in splits}
        )
        need = {split: total - sum(got.get(split, 0) for got in counts.values()) for split, total in wanted.items()}
        left = {group: count - sum(counts[group].values()) for group, count in group_counts.items()}
        fractions = sorted(
            (
                (share - math.floor(share), group, split)
                for group, shares in ideal.items()
                for split, share in shares.items()
            ),
            key=lambda item: (-item[0], item[1], item[2]),
        )
        for pass_ in ("fractions", "any"):
            for fraction, group, split in fractions:
                if left[group] and need[split] > 0 and (fraction > 0 or pass_ == "any"):
                    counts[group][split] += 1
                    left[group] -= 1
                    need[split] -= 1
        for group, rest in left.items():  # none where the groups share their splits; else to the group's largest
            if rest:
                largest = max(ideal[group], key=lambda split: (ideal[group][split], split))
                counts[group][largest] += rest
        return counts

    def fixed_ranges(self, group: str) -> list[tuple[int, str]]:
        """[(the first hash of a split's range, split), ...]: `group`'s splits by fixed shares of the hash's range."""
        weights = {split: weight for split, weight in sorted(self.weights_of(group).items()) if weight > 0}
        total, below, ranges = sum(weights.values()), 0, []
        for split, weight in weights.items():
            ranges.append(((below << 64) // total, split))
            below += weight
        return ranges

    def ranks(self, group_counts: dict[str, int]) -> dict[str, list[tuple[int, str]]]:
        """{group: [(rank of a split's first record, split), ...]} for the splits that get records (names sorted), of
        the groups cut by quota (none where they are cut by hash ranges)."""
        starts = {}
        stable = self.stable and sum(group_counts.values()) >= STABLE_AT
        small = {} if stable else group_counts
        for group, counts in self.counts(small).items():
            starts[group], start = [], 0
            for split in sorted(counts):
                if counts[split]:
                    starts[group].append((start, split))
                    start += counts[split]
        return starts

    def cut_ranks(self, histogram: dict[str, np.ndarray]) -> dict[str, list[tuple[int, str, int, int]]]:
        """{group: [(rank, split, hash bucket holding that rank, rank within the bucket), ...]}; a group cut by fixed
        hash ranges: [(-1, split, -1, the range's first hash), ...]."""
        wanted = {}
        ranks = self.ranks({group: int(counts.sum()) for group, counts in histogram.items()})
        for group, counts in histogram.items():
            if group not in ranks:
                wanted[group] = [(-1, split, -1, first) for first, split in self.fixed_ranges(group)]
                continue
            below = np.cumsum(counts) - counts  # Records in the buckets before each bucket.
            cuts = []
            for rank, split in ranks[group]:
                bucket = int(np.searchsorted(below, rank, side="right")) - 1
                cuts.append((rank, split, bucket, rank - int(below[bucket])))
            wanted[group] = cuts
        return wanted

    def __call__(self, items: list[tuple[str, str]]) -> SplitCuts:
        """The cuts for (key, group) items held in memory (what the pipeline finds without holding them)."""
        by_group: dict[str, list[SortKey]] = {}
        for key, group in items:
            by_group.setdefault(group, []).append(sort_key_of(key))
        cuts = {}
        ranks = self.ranks({group: len(keys) for group, keys in by_group.items()})
        for group, keys in by_group.items():
            if group not in ranks:
                cuts[group] = tuple(((first, ""), split) for first, split in self.fixed_ranges(group))
                continue
            keys.sort()
            cuts[group] = tuple((keys[rank], split) for rank, split in ranks[group])
        return SplitCuts(cuts)


@dataclass(frozen=True)
class FolderSplitPlan(StratifiedPlan):
    """A source's own splits kept (an image folder's train/, val/, test/): a record's group is `<split>/<label>`; a
    group of a split the source has goes whole to it, and the train folder's groups are cut by `weights` among
    train and the splits the source lacks (stratified by label, as StratifiedPlan)."""

    given: frozenset[str] = frozenset()  # the splits the source has, besides train

    def weights_of(self, group: str) -> dict[str, int]:
        split = group.split("/", 1)[0]
        if split != "train":
            return {split: 1}
        return {name: weight for name, weight in self.weights.items() if name == "train" or name not in self.given}


@dataclass(frozen=True)
class SplitCuts:
    """{group: ((sort key of a split's first record, split), ...)} in sort order."""

    cuts: dict[str, tuple[tuple[SortKey, str], ...]]

    @cached_property
    def _firsts(self) -> dict[str, list[SortKey]]:  # Looked up once a record: built once.
        return {group: [first for first, _ in starts] for group, starts in self.cuts.items()}

    def split(self, sort_key: SortKey, group: str) -> str:
        return self.cuts[group][bisect.bisect_right(self._firsts[group], sort_key) - 1][1]

    def __call__(self, key: str, group: str) -> str:
        return self.split(sort_key_of(key), group)


def _largest_remainders(shares: dict[str, float]) -> dict[str, int]:
    """Whole numbers, each its share rounded down or up, that sum to the shares' (rounded) total: the largest
    fractions are rounded up (ties: in the order given)."""
    counts = {name: math.floor(share) for name, share in shares.items()}
    extra = round(sum(shares.values())) - sum(counts.values())
    for name in sorted(shares, key=lambda name: -(shares[name] - counts[name]))[:extra]:
        counts[name] += 1
    return counts
