"""Sorted runs merged a batch at a time give what heapq.merge gives, row for row."""

from __future__ import annotations

import heapq
import random

from kflow.components.ingest.sorted_runs import merge_batches


def _runs(chosen: random.Random) -> list[list[list[tuple]]]:
    """Sorted runs cut into batches of random sizes (empty ones too), with keys repeated within and across runs."""
    runs = []
    for _ in range(chosen.randint(0, 7)):
        rows = sorted(
            (f"k{chosen.randint(0, 60):03d}", chosen.randbytes(chosen.randint(0, 2)))
            for _ in range(chosen.randint(0, 40))
        )
        batches, start = [], 0
        while start < len(rows) or chosen.random() < 0.2:
            size = chosen.randint(0, 9)
            batches.append(rows[start : start + size])
            start += size
        runs.append(batches)
    return runs


def test_merging_batches_gives_heapq_merges_order():
    for seed in range(400):
        runs = _runs(random.Random(seed))
        expected = list(heapq.merge(*([row for batch in run for row in batch] for run in runs)))
        batches = list(merge_batches(iter(run) for run in runs))
        assert [row for batch in batches for row in batch] == expected, seed
        assert all(batches), seed  # no empty batch handed on


def test_memory_stays_a_batch_a_run():
    """No output batch is larger than the batches in hand, one from each run (the runs interleaved)."""
    runs = [
        [[(f"{row:05d}-{run}", b"") for row in range(start, start + 100)] for start in range(0, 1000, 100)]
        for run in range(5)
    ]
    assert max(len(batch) for batch in merge_batches(runs)) <= 5 * 100
    assert sum(len(batch) for batch in merge_batches(runs)) == 5000
