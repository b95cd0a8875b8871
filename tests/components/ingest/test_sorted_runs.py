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


def test_many_runs_merge_the_same_through_heapq():
    chosen = random.Random(3)
    runs = [[sorted((f"k{chosen.randint(0, 999):03d}", b"") for _ in range(chosen.randint(0, 5)))] for _ in range(150)]
    expected = list(heapq.merge(*(run[0] for run in runs)))
    batches = list(merge_batches(iter(run) for run in runs))
    assert [row for batch in batches for row in batch] == expected
    assert all(batches)


def test_many_runs_are_read_a_batch_at_a_time_not_whole():
    pulled = []

    def run(number: int):
        for start in range(0, 50, 5):
            pulled.append(number)
            yield [(f"{row:03d}-{number:03d}", b"") for row in range(start, start + 5)]

    merged = merge_batches(run(number) for number in range(150))
    first = next(merged)
    assert first == sorted(first) and len(first) > 0
    assert len(pulled) < 150 * 10 / 2  # far from every batch of every run
    assert sum(len(batch) for batch in [first, *merged]) == 150 * 50
