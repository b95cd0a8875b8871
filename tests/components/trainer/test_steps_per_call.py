"""Steps per call: a set trainer.steps_per_execution, else the custom loop's chosen from timed single steps and
model.fit's from the epoch's size."""

from __future__ import annotations

import pytest

from kflow.components.trainer.steps_per_call import (
    FIT_MAX_GROWTH,
    FIT_MAX_STEPS,
    MAX_STEPS,
    TARGET_SECONDS,
    TIMED_CALLS,
    UNTIMED_CALLS,
    StepsPerCall,
    fit_steps_per_call,
    whole_calls,
)

SINGLE_CALLS = UNTIMED_CALLS + TIMED_CALLS
STEP = 2**-7  # seconds a step, exact in binary: TARGET_SECONDS / STEP steps a call


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class FakeRuntime:
    """Stands in for a strategy's runtime: counts its waits and agrees on what `agreed` makes of a value."""

    def __init__(self, agreed=lambda value: value):
        self.waits, self.proposed, self.agreed = 0, [], agreed

    def wait(self) -> None:
        self.waits += 1

    def agree(self, value: float) -> float:
        self.proposed.append(value)
        return self.agreed(value)


def train(calls: StepsPerCall, clock: Clock, steps: int, end: int, *, step_seconds: float, start: int = 0):
    """Runs the loop's calls from `start` up to `end` (or `steps` steps), each step taking `step_seconds`."""
    sizes, step = [], start
    while step < min(end, start + steps):
        size = calls.next(step, end)
        clock.now += size * step_seconds
        calls.called()
        sizes.append(size)
        step += size
    return sizes


def test_a_set_steps_per_execution_runs_that_many_up_to_the_epochs_end():
    runtime = FakeRuntime()
    calls = StepsPerCall(3, runtime, checkpoint_every=4, clock=Clock())
    assert train(calls, Clock(), 100, end=13, step_seconds=0.01) == [3, 3, 3, 3, 1]  # not cut at checkpoints
    assert runtime.proposed == [] and runtime.waits == 0


def test_unset_it_times_single_steps_then_runs_as_many_as_take_the_target_time():
    clock, runtime = Clock(), FakeRuntime()
    calls = StepsPerCall(None, runtime, clock=clock)
    sizes = train(calls, clock, 1000, end=1000, step_seconds=STEP)
    chosen = int(TARGET_SECONDS / STEP)
    assert sizes[:SINGLE_CALLS] == [1] * SINGLE_CALLS
    assert set(sizes[SINGLE_CALLS:-1]) == {chosen} and sizes[-1] <= chosen and sum(sizes) == 1000
    assert runtime.proposed == [pytest.approx(STEP)]  # the timed steps' mean, agreed once
    assert runtime.waits == 2  # before and after the timed calls (a parameter-server call only schedules)


def test_every_worker_takes_the_agreed_time():
    clock = Clock()
    calls = StepsPerCall(None, FakeRuntime(agreed=lambda value: 4 * value), clock=clock)
    train(calls, clock, SINGLE_CALLS, end=1000, step_seconds=STEP)
    assert calls.chosen == int(TARGET_SECONDS / (4 * STEP))


def test_slow_steps_stay_one_a_call_and_fast_ones_are_capped():
    for step_seconds, expected in ((2.0, 1), (1e-6, MAX_STEPS)):
        clock = Clock()
        calls = StepsPerCall(None, FakeRuntime(), clock=clock)
        train(calls, clock, SINGLE_CALLS, end=1000, step_seconds=step_seconds)
        assert calls.chosen == expected


def test_chosen_calls_stop_at_checkpoints_and_at_the_epochs_end():
    clock = Clock()
    calls = StepsPerCall(None, FakeRuntime(), checkpoint_every=20, clock=clock)
    sizes = train(calls, clock, 100, end=50, step_seconds=0.001)
    ends = [sum(sizes[: i + 1]) for i in range(len(sizes))]
    assert {20, 40, 50} <= set(ends) and ends[-1] == 50
    assert all(size <= 20 for size in sizes)


def test_an_epochs_end_restarts_the_timing_so_validation_is_not_timed():
    clock, runtime = Clock(), FakeRuntime()
    calls = StepsPerCall(None, runtime, clock=clock)
    train(calls, clock, 100, end=UNTIMED_CALLS + 2, step_seconds=STEP)  # the epoch ends after 2 timed steps
    calls.epoch_ended()
    clock.now += 30.0  # validation
    end = UNTIMED_CALLS + 2 + 100
    sizes = train(calls, clock, 100, end=end, step_seconds=STEP, start=UNTIMED_CALLS + 2)
    assert sizes[:TIMED_CALLS] == [1] * TIMED_CALLS
    assert runtime.proposed == [pytest.approx(STEP)] and calls.chosen == int(TARGET_SECONDS / STEP)


@pytest.mark.parametrize(
    ("epoch_steps", "expected"),
    [(1, 1), (4, 1), (99, 1), (100, 2), (299, 2), (300, 4), (700, 8), (1_500, 16), (3_100, 32), (5_364, 32)],
)
def test_model_fit_takes_the_most_steps_a_call_that_grow_an_epoch_by_at_most_one_percent(epoch_steps, expected):
    chosen = fit_steps_per_call(None, epoch_steps, steps_per_epoch_set=False)
    assert chosen == expected
    assert whole_calls(epoch_steps, chosen) - epoch_steps <= max(epoch_steps * FIT_MAX_GROWTH, 0)
    assert chosen <= FIT_MAX_STEPS


def test_model_fit_keeps_a_set_steps_per_execution_and_a_set_steps_per_epoch():
    assert fit_steps_per_call(3, 5_000, steps_per_epoch_set=False) == 3
    assert fit_steps_per_call(None, 5_000, steps_per_epoch_set=True) == 1
    assert whole_calls(13, 3) == 15 and whole_calls(12, 3) == 12
