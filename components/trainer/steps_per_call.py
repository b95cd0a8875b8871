"""How many train steps each call of the custom loop runs (`trainer.steps_per_execution`).

A call into a `tf.function` costs the same few milliseconds whatever it runs: 4 ms of a 27 ms MultiWorkerMirrored
MNIST step on this project's 2-core VM, and a parameter-server coordinator's dispatch is a fifth of such a step
(bench/README.md). Small, fast steps therefore train faster several to a call. A set `steps_per_execution` runs
that many; unset, the loop times a few single steps after the first few (the first traces the function; the next
ones still ran slower here, 32-36 ms against 25 ms later) and from then on runs as many a call as take about
`TARGET_SECONDS`. Chosen so, a call never runs past the epoch's end or a checkpoint, so the steps trained, their
order and the checkpoints are those of one step a call.

`model.fit` takes its steps a call once, before training (Keras' `compile(steps_per_execution=N)`), and runs whole
calls, so an epoch of one pass is rounded up to a multiple of N (its last call completed from the split's start).
Unset, it is chosen from the data's size (`fit_steps_per_call`): the most steps a call, up to 32, that grow an epoch by
at most 1 %. Stat2Data's AthleteGrad (171,644 training rows, 5,364 steps an epoch of a small MLP) trained at 18,192 ex/s
one step a call and 60,838 at 32, to the same accuracy (bench/README.md); an 8-step epoch (iris) keeps one.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Protocol

log = logging.getLogger("kflow.trainer")

TARGET_SECONDS = 0.25  # long enough to make a call's cost small, short enough for progress and the heartbeat
MAX_STEPS = 64
UNTIMED_CALLS = 4
TIMED_CALLS = 4
FIT_MAX_STEPS = 32  # a call of 32 steps of a small model took ~0.1 s here: the per-call cost is then a few per cent
FIT_MAX_GROWTH = 0.01  # the share of an epoch that rounding it up to whole calls may add


class Timing(Protocol):
    """What a strategy's runtime offers the choice: `wait` until the scheduled steps ran, and `agree` on a
    measured value, so every worker of a synchronous cluster chooses alike."""

    def wait(self) -> None: ...

    def agree(self, value: float) -> float: ...


class StepsPerCall:
    """`next(step, end)` before each call, `called()` after it, `epoch_ended()` after each epoch's last call."""

    def __init__(
        self,
        setting: int | None,
        runtime: Timing,
        checkpoint_every: int | None = None,
        clock: Callable[[], float] = time.perf_counter,
    ):
        self.setting, self.runtime, self.checkpoint_every, self.clock = setting, runtime, checkpoint_every, clock
        self.chosen: int | None = None
        self._untimed = 0
        self._timed = 0
        self._started: float | None = None

    def next(self, step: int, end: int) -> int:
        """The steps of the call that starts after `step` steps, at most up to `end` (the epoch's last step)."""
        limit = end - step
        if self.setting is not None:
            return min(self.setting, limit)
        if self.checkpoint_every:
            limit = min(limit, self.checkpoint_every - step % self.checkpoint_every)
        if self.chosen is not None:
            return min(self.chosen, limit)
        if self._untimed == UNTIMED_CALLS and self._started is None:
            self.runtime.wait()
            self._started = self.clock()
        return 1

    def called(self) -> None:
        if self.setting is not None or self.chosen is not None:
            return
        if self._untimed < UNTIMED_CALLS:
            self._untimed += 1
            return
        self._timed += 1
        if self._timed < TIMED_CALLS or self._started is None:
            return
        self.runtime.wait()
        seconds = self.runtime.agree((self.clock() - self._started) / self._timed)
        self.chosen = max(1, min(MAX_STEPS, int(TARGET_SECONDS / max(seconds, 1e-9))))
        log.info("train: %d step(s) a call (a step took %.1f ms)", self.chosen, seconds * 1000)

    def epoch_ended(self) -> None:
        """Drops a timing the epoch's end cut short: the next call would time the validation with it."""
        self._timed, self._started = 0, None


def fit_steps_per_call(setting: int | None, epoch_steps: int, steps_per_epoch_set: bool) -> int:
    """`model.fit`'s steps a call for an epoch of `epoch_steps` steps: `setting` (trainer.steps_per_execution) when
    set; else 1 for a set steps_per_epoch (it must stay as set), and otherwise the largest power of two up to
    FIT_MAX_STEPS whose rounding up adds at most FIT_MAX_GROWTH of an epoch (at most N - 1 steps)."""
    if setting is not None:
        return setting
    if steps_per_epoch_set:
        return 1
    steps = 1
    while steps * 2 <= FIT_MAX_STEPS and steps * 2 - 1 <= epoch_steps * FIT_MAX_GROWTH:
        steps *= 2
    return steps


def whole_calls(steps: int, per_call: int) -> int:
    """`steps` rounded up to a multiple of `per_call`."""
    return -(-steps // per_call) * per_call
