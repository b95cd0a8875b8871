"""Training with Keras' own `model.fit`, for the strategies under which it works (`StrategySpec.fit`).

It drives any `Task` as the custom loop does (kflow.components.trainer.loop): the task gives
the datasets, the model, its per-example loss and its metrics. The loss is reduced as the
loop reduces it: a mean over the sample weights when batches carry them (the masked tokens
of the MLM, Quora's class weights: `mean_with_sample_weight`), a plain mean otherwise; the
task's metrics are weighted metrics. `BackupAndRestore` in the working dir makes a re-run
resume where a killed one stopped, as the loop's checkpoints do.
"""

from __future__ import annotations

import functools
import logging
import math
import time
from pathlib import Path
from typing import Any

import keras

from kflow.components.trainer import fit_scan
from kflow.components.trainer.epoch_journal import EpochJournal
from kflow.components.trainer.optimizers import make_optimizer
from kflow.components.trainer.save_pacing import SavePacing
from kflow.components.trainer.steps_per_call import fit_steps_per_call, whole_calls
from kflow.components.trainer.training import (
    describe_training,
    export_model,
    log_epochs_trained,
    read_splits,
    strategy_trainer,
    training_summary,
    watched_metric,
    write_process_state,
)
from kflow.components.trainer.validation_batches import kept_in_memory
from kflow.components.trainer.warm_start import warm_start
from kflow.components.util import epoch_report
from kflow.components.util.progress import EpochProgress
from kflow.pipeline.dsl import heartbeat

log = logging.getLogger("kflow.trainer")


@strategy_trainer
def train(task, runtime, examples, model, model_run, config, working_dir) -> dict[str, Any]:
    """Fits `task`'s model on Split-train (validating on Split-eval), exports it, writes the history; returns it."""
    working_dir = Path(working_dir)
    global_batch = config.batch_size
    runtime.check_batch(global_batch)  # mirrored's replicas too: else a raw AddN shape error mid-step
    dataset, train_count, eval_count, steps_per_epoch = read_splits(task, examples, config)
    per_call = fit_steps_per_call(config.steps_per_execution, steps_per_epoch, config.steps_per_epoch is not None)
    batch_spec = functools.cache(lambda: dataset("train", False, global_batch).element_spec)  # one batch's specs
    # Keras' own functions of several steps a call fail under tf.distribute: the Trainer's count the steps.
    steps_counted = runtime.replicas > 1 and keras.backend.backend() == "tensorflow"
    if per_call > 1 and steps_counted and varying_shapes(batch_spec()):
        # Each replica reads batches of its own shape (the MLM's, cut to their lines); inside a call of several
        # steps the replicas' sparse gradients, gathered, then disagree in shape: "Shape mismatch in the
        # collective instance". One step a call runs them (the custom loop's strategies run several).
        said = f"trainer.steps_per_execution={per_call} set, but " if config.steps_per_execution else ""
        level = logging.WARNING if said else logging.INFO
        log.log(level, "train: %sbatches of varying shapes on %d replicas: one step a call", said, runtime.replicas)
        per_call = 1
    steps_per_epoch = whole_calls(steps_per_epoch, per_call)
    # A pass over the split is exactly steps_per_epoch batches unless steps_per_epoch is set or rounded up to whole
    # calls of steps_per_execution.
    one_pass = config.steps_per_epoch is None and steps_per_epoch == math.ceil(train_count / global_batch)
    examples_per_epoch = train_count if one_pass else steps_per_epoch * global_batch
    validation_steps = math.ceil(eval_count / global_batch) if eval_count else None

    with runtime.scope():
        keras_model = task.build_model()
        started_from = warm_start(keras_model, config, task)  # trainer.warm_start: an earlier model's weights
        loss = task.loss()
        loss.reduction = "mean_with_sample_weight"
        keras_model.compile(
            optimizer=make_optimizer(config, steps_per_epoch * config.epochs),
            loss=loss,
            weighted_metrics=task.metrics(),
            steps_per_execution=per_call,
        )
        scanned = fit_scan.scans(per_call, runtime.process_count, runtime.replicas)
        if scanned:  # Keras' JAX loop takes and places every batch alone: a block a call, scanned where faster.
            fit_scan.run_block_calls(keras_model, batch_spec(), per_call)
        if steps_counted:
            _build_from_batch_specs(keras_model, batch_spec())
            if per_call > 1:
                from kflow.components.trainer.fit_steps import run_steps_per_call

                run_steps_per_call(keras_model, per_call, validation_steps)
    chief = runtime.process_index == 0
    epoch_log = EpochLog(config.epochs, examples_per_epoch, steps_per_epoch, global_batch, config.log_every_steps)
    epoch_log.journal_in(working_dir, chief)
    # Each process of a multi-process strategy backs up its own state (they hold the same weights).
    backup = working_dir / "backup"
    if runtime.process_count > 1:
        backup = backup / f"process-{runtime.process_index}"
    callbacks: list[keras.callbacks.Callback] = [
        PacedBackup(
            str(backup),
            SavePacing(paced=runtime.process_count == 1),
            config.epochs,
            save_freq=config.checkpoint_every_steps or "epoch",
            delete_checkpoint=False,
        ),
        epoch_log,
    ]
    if config.early_stopping_patience is not None:  # split_sizes refused it without eval examples
        monitor, mode = watched_metric(task, config)
        patience = config.patience_epochs(steps_per_epoch)
        # The best epoch's weights are the model, as the custom loop keeps them (loop.py): on small data the last
        # epoch before the stop is past the best by `patience` epochs of overfitting.
        stopping = keras.callbacks.EarlyStopping(
            monitor=monitor, mode=mode, patience=patience, restore_best_weights=True
        )
        callbacks.append(stopping)
    if chief:
        # Epoch scalars, as the custom loop writes; the graph Keras writes by default cost 0.15 s of the first epoch.
        callbacks.append(keras.callbacks.TensorBoard(log_dir=str(model_run.log_dir), write_graph=False))
    log.info(
        "train: %s, strategy %s on %d replica(s)%s%s",
        describe_training(task, config, steps_per_epoch),
        config.strategy,
        runtime.replicas,
        f" in {runtime.process_count} processes" if runtime.process_count > 1 else "",
        f", {per_call} steps a call" if per_call > 1 else "",
    )
    started = time.perf_counter()
    # Keras starts a new validation iterator at each validation (and deletes the last: input_autotune.py says why that
    # could stall); given the steps, it reads one pass of the repeated split.
    validation = runtime.fit_batches(dataset, "eval", False, global_batch) if eval_count else None
    if validation is not None:  # a small split from memory: a new iterator over its files costs 20 ms an epoch
        validation = kept_in_memory(validation, validation_steps)
    if validation is not None and per_call > 1 and not steps_counted:
        # Keras' call of several steps stops early only at the end of a finite dataset; it would read on into the
        # split's start, twice-counted, and the pass would end mid-call. Keras starts a finite one at each validation.
        validation = validation.take(validation_steps)
    train_batches = runtime.fit_batches(dataset, "train", True, global_batch)
    keras_model.fit(
        fit_scan.blocks(train_batches, per_call) if scanned else train_batches,
        validation_data=validation,
        validation_steps=validation_steps,
        epochs=config.epochs,
        steps_per_epoch=steps_per_epoch,
        callbacks=callbacks,
        shuffle=False,  # The task's dataset shuffles itself.
        verbose=0,
    )
    seconds = time.perf_counter() - started
    kept = next((c for c in callbacks if isinstance(c, keras.callbacks.EarlyStopping)), None)
    if kept is not None and kept.best_weights is not None:  # Keras restored them at the end of fit
        log.info("train: the weights of epoch %d (the best %s) are kept", kept.best_epoch + 1, kept.monitor)
    examples_trained = examples_per_epoch * len(epoch_log.epochs)
    if chief:
        # A TensorFlow process exports the serving SavedModel too; for a JAX one the Trainer does it after.
        with runtime.unsharded():
            export_model(task, keras_model, model, serving=keras.backend.backend() == "tensorflow")
    summary = training_summary(
        task,
        config,
        runtime,
        per_epoch=epoch_log.epochs,
        steps=(epoch_log.start_step, int(keras_model.optimizer.iterations.numpy())),
        stopped_early=any(
            isinstance(callback, keras.callbacks.EarlyStopping) and callback.stopped_epoch for callback in callbacks
        ),
        counts=(train_count, eval_count, steps_per_epoch),
        examples_trained=examples_trained,
        seconds=seconds,
        earlier=epoch_log.journal.earlier,
        warm_started_from=started_from,
    )
    if runtime.process_count > 1:  # What each process ended with: the same weights, if all went well.
        write_process_state(model_run, f"process-{runtime.process_index}", summary["final_step"], keras_model)
    if chief:
        model_run.write_json("history.json", summary)
        layouts = runtime.weight_layouts(keras_model)
        if layouts:  # Which weights the strategy sharded, and how: what the mesh actually held.
            model_run.write_json("sharding.json", layouts)
    log_epochs_trained(summary)
    return summary


def _build_from_batch_specs(keras_model: keras.Model, batch_spec: Any) -> None:
    """Builds the model from the specs of this process's own batches, before `fit`.

    Under a tf.distribute strategy of several replicas, Keras' `fit` and `evaluate` first average an input batch
    over the replicas to build the model (keras/src/backend/tensorflow/trainer.py, `_maybe_symbolic_build`), even
    when it is built already. There is no string mean (tensorflow/tensorflow#80951), no boolean sum (`AddN`), and
    no mean of a batch the replicas hold unevenly: a model that reads raw text or string columns, or a padding mask
    (keras-hub's BERT), could not train under `mirrored` on 2 devices, nor any model validating on a small table's
    eval split of 11 rows (6 and 5: `AddN … [6,1] != [5,1]`, 3 of 4 gauntlet tables). Once everything that step
    builds (model, compiled loss and metrics, optimizer) is built here, the averaging is skipped.
    """
    keras_model._symbolic_build(data_batch=batch_spec)  # Shapes and dtypes are all it reads: no batch is read.
    keras_model._maybe_symbolic_build = lambda iterator=None, data_batch=None: None


class PacedBackup(keras.callbacks.BackupAndRestore):
    """Keras' BackupAndRestore, saving at an epoch's end when `SavePacing` says (save_pacing.py); what it saves
    and restores is Keras' own (this overrides the epoch end of keras 3.15's callback, pinned).

    Keras counts an epoch's first call of several steps one step short (it takes the batch index seen before as 0,
    so a call ending at batch 7 adds 7): with `save_freq` (trainer.checkpoint_every_steps) of 8 and 8-step epochs in
    one call, it saved every other epoch. The batch seen before an epoch is -1 here."""

    def __init__(self, backup_dir: str, pacing: SavePacing, epochs: int, **kwargs: Any):
        super().__init__(backup_dir, **kwargs)
        self.pacing, self.epochs = pacing, epochs
        self._last_batch_seen = -1

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        self._current_epoch = epoch + 1
        self._last_batch_seen = -1
        if self.save_freq == "epoch" and self.pacing.due(last=epoch + 1 == self.epochs):
            self.pacing.timed(self._save_model)


class EpochLog(keras.callbacks.Callback):
    """Shows the progress within each epoch (components/util/progress.py), logs one line per epoch
    (Keras' own progress bar is unreadable in log files) and keeps the history."""

    def __init__(self, epochs: int, examples_per_epoch: int, steps: int, batch_size: int, log_every_steps: int):
        super().__init__()
        self.total_epochs = epochs
        self.examples_per_epoch = examples_per_epoch
        self.steps, self.batch_size, self.log_every_steps = steps, batch_size, log_every_steps
        self.epochs: list[dict[str, float]] = []
        self.start_step = 0
        self._started = 0.0
        self._progress: EpochProgress | None = None
        self._journaled: tuple[Path, bool] | None = None
        self.journal = EpochJournal(None, 0, writes=False)

    def journal_in(self, working_dir: Path, writes: bool) -> None:
        """Keeps the finished epochs in `working_dir` (epoch_journal.py), read back when a run resumes."""
        self._journaled = (working_dir, writes)

    def on_train_begin(self, logs: dict | None = None) -> None:
        # BackupAndRestore, before this callback, has restored the weights and optimizer of a killed run.
        self.start_step = int(self.model.optimizer.iterations.numpy())
        if self.start_step:
            log.info("train: resumed from step %d", self.start_step)
        if self._journaled is not None:
            self.journal = EpochJournal(self._journaled[0], self.start_step, writes=self._journaled[1])

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        self._started = time.perf_counter()
        self._progress = EpochProgress(epoch + 1, self.total_epochs, self.steps, self.batch_size, self.log_every_steps)

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        if self._progress is not None:
            self._progress.update(batch + 1, lambda: float((logs or {}).get("loss", float("nan"))))

    def on_test_batch_end(self, batch: int, logs: dict | None = None) -> None:
        heartbeat.beat()  # Validation is progress too: a long one is no stall.

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        if self._progress is not None:
            self._progress.close()
        seconds = time.perf_counter() - self._started
        metrics = {name: float(value) for name, value in (logs or {}).items()}
        speed = self.examples_per_epoch / max(seconds, 1e-9)
        step = int(self.model.optimizer.iterations.numpy())
        self.epochs.append(
            {
                "epoch": epoch + 1,
                **metrics,
                "step": step,
                "seconds": round(seconds, 3),
                "examples_per_second": round(speed, 1),
            }
        )
        self.journal.add(self.epochs[-1])
        shown = " ".join(f"{name}={metrics[name]:.4f}" for name in sorted(metrics, key=_display_order))
        log.info("train: epoch %d/%d %s (%.1f s, %.0f ex/s)", epoch + 1, self.total_epochs, shown, seconds, speed)
        epoch_report.report(epoch + 1, metrics)  # a tuner's trial hears it (and may end the training: pruned)


def _display_order(metric: str) -> tuple[bool, bool, str]:
    """Training metrics before validation ones, the loss first in each."""
    base = metric.removeprefix("val_")
    return metric.startswith("val_"), base != "loss", base


def varying_shapes(element_spec: Any) -> bool:
    """Whether a dataset's batches may differ in a shape beyond their size (a dimension unknown past the first)."""
    return any(None in tuple(spec.shape)[1:] for spec in keras.tree.flatten(element_spec) if spec.shape.rank)
