"""Early stopping in kflow's own loops (the custom loop, the explicit JAX loop), as Keras'
`EarlyStopping(restore_best_weights=True)` does in `fit`: stop once the watched validation metric has not improved
for `patience` epochs, and keep the best epoch's weights (on small data the last epoch before the stop is past the best
by `patience` epochs of overfitting)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

log = logging.getLogger("kflow.trainer")


class BestEpoch:
    """The best epoch so far by `monitor` ("min" or "max" `mode`), and a copy of its weights."""

    def __init__(self, monitor: str, mode: str, patience: int) -> None:
        self.monitor, self.mode, self.patience = monitor, mode, patience
        self.best: float | None = None
        self.waited, self.epoch, self.weights = 0, 0, None

    def stops(self, epoch: int, values: dict[str, float], copy_weights: Callable[[], Any]) -> bool:
        """Whether training stops after `epoch`, whose metrics are `values`; `copy_weights()` copies the weights of an
        epoch better than every one before (the next steps overwrite the ones trained)."""
        current = values.get(self.monitor)
        if current is None:
            raise ValueError(f"early stopping watches {self.monitor!r}, not among the metrics {sorted(values)}")
        if self.best is None or (current < self.best if self.mode == "min" else current > self.best):
            self.best, self.waited, self.epoch, self.weights = current, 0, epoch, copy_weights()
            return False
        self.waited += 1
        if self.waited < self.patience:
            return False
        log.info(
            "train: early stop after epoch %d (%s did not improve for %d epochs)", epoch, self.monitor, self.waited
        )
        return True

    def kept_weights(self, last_epoch: int) -> Any | None:
        """The best epoch's weights where the last epoch trained was not the best (stopped or not, as Keras restores
        at fit's end), else None."""
        if self.weights is None or self.epoch == last_epoch:
            return None
        log.info("train: the weights of epoch %d (the best %s) are kept", self.epoch, self.monitor)
        return self.weights
