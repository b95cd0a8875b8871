"""Sorted runs merged a batch at a time: the k-way merge of an ingest's part files, in C where it can be.

`heapq.merge` moves one row at a time through a Python generator (about a microsecond a row); here each step
takes, from the batch in hand of every run, the rows up to the smallest last row among those batches (no row
still unread can come before it) and sorts them in one `list.sort`, which finds the runs in them and merges them
in C. Memory stays one batch a run, as with `heapq.merge`; the order is the same (rows compared whole, so equal
keys are ordered by what follows them). It pays with tens of runs (1.3 M rows in batches of 250: 26 runs 0.6 s,
heapq 1.6 s); with hundreds a step takes about a row of each run and it is slower (261 runs: 1.7 s, 1.55 s; 140 runs
of 40-row batches, MNIST's: 0.9-1.2 s, 0.7-0.9 s), so past MOST_RUNS runs the rows go through `heapq.merge`.
The Quora and CSV ingests' chunks, each a run of every shard, are 20,000 rows for this.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
from collections.abc import Iterable, Iterator

MOST_RUNS = 100
_HEAPQ_BATCH = 1024  # rows a batch when heapq merges


def merge_batches(runs: Iterable[Iterable[list[tuple]]]) -> Iterator[list[tuple]]:
    """The rows of `runs` (each an iterable of batches: lists of rows, sorted within and across batches) in
    sorted order, as batches."""
    heads = [head for head in (_next_batch(iter(run)) for run in runs) if head is not None]  # [batch, start, run]
    if len(heads) > MOST_RUNS:
        rows = heapq.merge(*(itertools.chain(batch, itertools.chain.from_iterable(run)) for batch, _, run in heads))
        while batch := list(itertools.islice(rows, _HEAPQ_BATCH)):
            yield batch
        return
    while len(heads) > 1:
        limit = min(batch[-1] for batch, _, _ in heads)
        rows, kept = [], []
        for head in heads:
            batch, start, run = head
            if batch[start] > limit:  # nothing of this batch yet (compared before bisecting: most are so)
                kept.append(head)
                continue
            cut = bisect.bisect_right(batch, limit, start)
            rows += batch[start:cut]
            if cut < len(batch):
                head[1] = cut  # the rest waits: an index, not a copy of it
                kept.append(head)
            elif (following := _next_batch(run)) is not None:
                kept.append(following)
        heads = kept
        rows.sort()
        yield rows
    for batch, start, run in heads:  # One run left: its batches as they come.
        yield batch[start:]
        yield from filter(None, run)


def _next_batch(run: Iterator[list[tuple]]) -> list | None:
    for batch in run:
        if batch:
            return [batch, 0, run]
    return None
