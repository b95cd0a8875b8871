"""When an epoch's end saves the training state (the loop's checkpoint, `fit`'s BackupAndRestore).

A save costs about the same whatever the epoch took: 25 ms for iris's MLP on this project's 2-core VM, where a
whole epoch of 8 steps and its validation takes 45 ms, so saving after every epoch made a third of iris's training
time. Paced, an epoch's end saves when the training since the last save took at least `COST_SHARE`'s inverse times
the last save (ten times: saving costs at most about a tenth of the training), and the last epoch's end always saves.
Long epochs (MNIST's, seconds each) still save after each one; a killed run of short ones resumes a few epochs back,
at most `1 / COST_SHARE` saves' worth of time. A process of a cluster saves after every epoch: its peers must
decide alike, and their clocks differ.
"""

from __future__ import annotations

import time
from collections.abc import Callable

COST_SHARE = 0.1


class SavePacing:
    """`due(last)` at each epoch's end; `timed(save)` runs a save and learns its cost."""

    def __init__(self, paced: bool = True, clock: Callable[[], float] = time.perf_counter):
        self.paced, self.clock = paced, clock
        self.cost = 0.0  # unknown until the first save: the first epoch's end saves
        self.since = clock()

    def due(self, last: bool) -> bool:
        return not self.paced or last or (self.clock() - self.since) * COST_SHARE >= self.cost

    def timed(self, save: Callable[[], None]) -> None:
        started = self.clock()
        save()
        self.since = self.clock()
        self.cost = self.since - started
