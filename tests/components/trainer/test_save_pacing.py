"""An epoch's end saves the training state when the training since the last save took ten times the last save."""

from __future__ import annotations

import pytest

from kflow.components.trainer.save_pacing import COST_SHARE, SavePacing


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _saves(pacing: SavePacing, clock: Clock, epochs: int, epoch_seconds: float, save_seconds: float) -> list[int]:
    saved = []

    def save():
        clock.now += save_seconds

    for epoch in range(1, epochs + 1):
        clock.now += epoch_seconds
        if pacing.due(last=epoch == epochs):
            pacing.timed(save)
            saved.append(epoch)
    return saved


def test_short_epochs_save_about_a_tenth_of_the_time_and_always_at_the_end():
    clock = Clock()
    saved = _saves(SavePacing(clock=clock), clock, epochs=40, epoch_seconds=0.045, save_seconds=0.025)
    assert saved[0] == 1 and saved[-1] == 40
    gaps = [later - earlier for earlier, later in zip(saved, saved[1:-1], strict=False)]
    assert gaps and all(gap == 6 for gap in gaps)  # 6 × 45 ms of training ≥ 10 × 25 ms of saving
    saving, training = len(saved) * 0.025, 40 * 0.045
    assert saving <= COST_SHARE * training + 2 * 0.025  # the first and the last saves are not paced


def test_long_epochs_and_cluster_processes_save_after_every_epoch():
    clock = Clock()
    assert _saves(SavePacing(clock=clock), clock, 5, epoch_seconds=10.0, save_seconds=0.5) == [1, 2, 3, 4, 5]
    clock = Clock()
    assert _saves(SavePacing(paced=False, clock=clock), clock, 5, 0.01, 0.5) == [1, 2, 3, 4, 5]


def test_fits_paced_backup_saves_the_last_epoch_and_a_longer_rerun_resumes_after_it(tmp_path):
    import keras
    import numpy as np

    from kflow.components.trainer.fit import PacedBackup

    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(64, 4)).astype("float32"), rng.integers(0, 2, 64)
    trained = []

    def fit(epochs: int) -> None:
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2, activation="softmax")])
        model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
        backup = PacedBackup(str(tmp_path / "backup"), SavePacing(), epochs, save_freq="epoch", delete_checkpoint=False)
        record = keras.callbacks.LambdaCallback(on_epoch_begin=lambda epoch, logs: trained.append(epoch + 1))
        model.fit(x, y, epochs=epochs, batch_size=16, verbose=0, callbacks=[backup, record])

    fit(6)
    assert trained == [1, 2, 3, 4, 5, 6]
    trained.clear()
    fit(9)  # a rerun of a longer schedule: Keras' BackupAndRestore restores after epoch 6 (saved: the last)
    assert trained == [7, 8, 9]


@pytest.mark.parametrize("steps_per_execution", [1, 8])
def test_a_backup_every_n_steps_is_saved_every_n_steps_whatever_the_steps_a_call(tmp_path, steps_per_execution):
    """trainer.checkpoint_every_steps of 8 on 8-step epochs: a save each epoch, one step a call or 8 (Keras counted
    an epoch's first call of several steps one short, and saved every other epoch)."""
    import keras
    import numpy as np

    from kflow.components.trainer.fit import PacedBackup

    saved_after = []

    class Counted(PacedBackup):
        def _save_model(self):
            saved_after.append(int(self.model.optimizer.iterations.numpy()))
            super()._save_model()

    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(64, 4)).astype("float32"), rng.integers(0, 2, 64)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2, activation="softmax")])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", steps_per_execution=steps_per_execution)
    backup = Counted(str(tmp_path / "backup"), SavePacing(), 4, save_freq=8, delete_checkpoint=False)
    model.fit(x, y, epochs=4, batch_size=8, verbose=0, callbacks=[backup])
    assert saved_after == [8, 16, 24, 32]
