"""The stratified plan's counts: each group cut by its shares, the remainders apportioned so that small groups do
not leave a split empty and each split's total is the whole's share to a record."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from kflow.components.ingest.split_plan import FolderSplitPlan, StratifiedPlan

PLAN = StratifiedPlan({"train": 8, "eval": 1, "test": 1})


def totals(counts: dict[str, dict[str, int]]) -> dict[str, int]:
    return {split: sum(got.get(split, 0) for got in counts.values()) for split in ("eval", "test", "train")}


def test_small_groups_still_fill_every_split():
    # 5 classes of 3 rows: rounding each class alone gave test 5 rows and eval none
    counts = PLAN.counts({name: 3 for name in "abcde"})
    assert totals(counts) == {"eval": 2, "test": 1, "train": 12}
    assert all(sum(got.values()) == 3 and got["train"] >= 2 for got in counts.values())
    assert totals(PLAN.counts({"all": 13})) == {"eval": 1, "test": 1, "train": 11}


@given(st.lists(st.integers(min_value=0, max_value=400), min_size=1, max_size=12))
def test_groups_keep_their_records_and_their_ratios_to_a_record(sizes):
    groups = {f"g{index}": size for index, size in enumerate(sizes)}
    counts = PLAN.counts(groups)
    whole = sum(sizes)
    for split, total in totals(counts).items():
        share = whole * {"train": 8, "eval": 1, "test": 1}[split] / 10
        assert math.floor(share) <= total <= math.ceil(share)  # the whole's share, to a record
    for name, size in groups.items():
        assert sum(counts[name].values()) == size  # nothing lost, nothing twice
        for split, got in counts[name].items():
            share = size * {"train": 8, "eval": 1, "test": 1}[split] / 10
            assert math.floor(share) - 1 <= got <= math.ceil(share) + 1


def test_a_folders_own_split_goes_whole_to_it():
    plan = FolderSplitPlan({"train": 8, "eval": 1, "test": 1}, frozenset({"eval"}))
    counts = plan.counts({"train/a": 30, "train/b": 7, "eval/a": 4, "eval/b": 3})
    assert counts["eval/a"] == {"eval": 4} and counts["eval/b"] == {"eval": 3}
    assert counts["train/a"]["test"] + counts["train/b"]["test"] == round(37 / 9)
    assert all(set(counts[group]) == {"train", "test"} for group in ("train/a", "train/b"))
