"""Who hears of each finished epoch in this process, beside the Trainer's own log: a tuner's trial (its pruner).

The training paths (fit.py's epoch callback, loop.py's epoch loop) call `report(epoch, metrics)` after each epoch
with the epoch's metrics (val_ ones included); a listener set with `listening` may raise to end the training (a
pruned trial raises optuna's TrialPruned), which then ends as any error in an epoch does. Without a listener it
does nothing: a Trainer outside a tuner never sees one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

Listener = Callable[[int, dict[str, float]], None]

_listeners: list[Listener] = []


@contextmanager
def listening(listener: Listener) -> Iterator[None]:
    """`listener(epoch, metrics)` hears every epoch this process trains while the block runs."""
    _listeners.append(listener)
    try:
        yield
    finally:
        _listeners.remove(listener)


def report(epoch: int, metrics: dict[str, float]) -> None:
    """Tells the listeners that `epoch` (from 1) ended with `metrics`."""
    for listener in list(_listeners):
        listener(epoch, metrics)
