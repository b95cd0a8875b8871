"""The explicit JAX training loop (strategy `jax_data_parallel`), for users who want the loop in their hands.

As in Keras' guide "distributed training with JAX": the train state (trainable and
non-trainable variables, optimizer variables, metric variables) is a pytree of JAX arrays
replicated on every device; one step is a `jax.jit` function over `model.stateless_call`,
`jax.value_and_grad` and `optimizer.stateless_apply`; each global batch is laid over the
devices with `NamedSharding(mesh, PartitionSpec("batch"))`, so XLA inserts the gradient
all-reduce. On several processes each feeds its rows of the batch
(`jax.make_array_from_process_local_data`). The state goes back into the Keras model at the
end, which is exported as under every other strategy. Epoch-end checkpoints
(`working_dir/jax_state.npz`, written by process 0) let a re-run resume.
"""

from __future__ import annotations

import collections
import logging
import os
import time
import zipfile
from pathlib import Path
from typing import Any

import jax
import numpy as np

from kflow.components.trainer.early_stop import BestEpoch
from kflow.components.trainer.epoch_journal import EpochJournal
from kflow.components.trainer.optimizers import make_optimizer
from kflow.components.trainer.strategies.runtime import unpack
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
from kflow.components.trainer.warm_start import warm_start
from kflow.components.util.progress import EpochProgress
from kflow.pipeline.dsl import heartbeat
from kflow.pipeline.dsl.durable import fsync_path

log = logging.getLogger("kflow.trainer")

IN_FLIGHT = 2  # steps dispatched ahead of the devices: real MNIST 2 x 2 trained at 2,294 ex/s (one: 2,205)
# Training batches are read from tf.data and laid over the devices a block at a time, each step taking its batch
# from the block inside its jitted program: read and placed one by one, the guide's convnet spent 1.35-1.38 s of
# its main thread's CPU an epoch of 922 steps on it (as numpy 1.1 ms, placed 0.8 ms a batch), 0.33-0.35 s in
# blocks of 8, the same batches in the same order (jax_mnist.yaml, 2026-11-30).
BLOCK_STEPS = 8
BLOCK_BYTES = 32 * 2**20  # fewer steps a block where its batches would hold more


@strategy_trainer  # TrainConfig.validate refuses mixed_precision here: this loop trains in float32
def train(task, runtime, examples, model, model_run, config, working_dir) -> dict[str, Any]:
    """Trains `task`'s model in an explicit JAX loop (jitted stateless steps) and, in process 0, exports it."""
    working_dir = Path(working_dir)
    global_batch = config.batch_size
    runtime.check_batch(global_batch)
    make_dataset, train_count, eval_count, steps_per_epoch = read_splits(task, examples, config)
    eval_steps = -(-eval_count // global_batch)

    keras_model = task.build_model()
    started_from = warm_start(keras_model, config, task)  # trainer.warm_start: an earlier model's weights
    optimizer = make_optimizer(config, steps_per_epoch * config.epochs)
    optimizer.build(keras_model.trainable_variables)
    loss_object = task.loss()
    loss_object.reduction = "mean_with_sample_weight"
    metrics = task.metrics()
    for metric in metrics:
        metric.reset_state()  # Builds the metric variables.
    steps = Steps(keras_model, optimizer, loss_object, metrics)

    state = current_state(keras_model, optimizer, metrics)
    checkpoint = working_dir / "jax_state.npz"
    state, start_step = resume(checkpoint, state)
    journal = EpochJournal(working_dir, start_step, writes=runtime.process_index == 0)
    state = jax.tree.map(lambda value: place(value, runtime.replicated), state)

    def batches(split: str, training: bool):
        for batch in runtime.fit_batches(make_dataset, split, training, global_batch).as_numpy_iterator():
            yield jax.tree.map(lambda rows: place(rows, runtime.batch_split), unpack(batch))

    log.info(
        "train: %s, an explicit JAX loop over %d device(s)%s",
        describe_training(task, config, steps_per_epoch),
        runtime.replicas,
        f" in {runtime.process_count} processes" if runtime.process_count > 1 else "",
    )
    chief = runtime.process_index == 0
    train_batches = batches_in_blocks(runtime, runtime.fit_batches(make_dataset, "train", True, global_batch))
    history: list[dict[str, float]] = []
    step, started = start_step, time.perf_counter()
    best, stopped_early = BestEpoch(*watched_metric(task, config), config.patience_epochs(steps_per_epoch) or 0), False

    def copy_weights():  # the trainable and non-trainable variables, on their devices: the next step donates them
        return jax.tree.map(jax.numpy.copy, state[:2])

    for epoch in range(start_step // steps_per_epoch, config.epochs):
        epoch_started = time.perf_counter()
        state = steps.reset_metrics(state)
        progress = EpochProgress(epoch + 1, config.epochs, steps_per_epoch, global_batch, config.log_every_steps)
        loss_sum = place(np.float32(0.0), runtime.replicated)
        in_flight = InFlight()
        for index in range(steps_per_epoch):
            loss_sum, state = steps.train_in_block(state, loss_sum, *next(train_batches))  # the loss stays on device
            in_flight.add(loss_sum)
            progress.update(index + 1, lambda total=loss_sum, done=index + 1: float(total) / done)
        values = {"loss": float(loss_sum) / steps_per_epoch, **steps.metric_results(state)}
        progress.close()
        train_seconds = time.perf_counter() - epoch_started
        step += steps_per_epoch
        if eval_steps:
            evaluated = evaluate(steps, state, batches, eval_steps, place(np.float32(0.0), runtime.replicated))
            values.update({f"val_{name}": value for name, value in evaluated.items()})
        speed = steps_per_epoch * global_batch / max(train_seconds, 1e-9)
        seconds = time.perf_counter() - epoch_started
        history.append(
            {
                "epoch": epoch + 1,
                **values,
                "step": step,
                "seconds": round(seconds, 3),
                "examples_per_second": round(speed, 1),
            }
        )
        if chief:
            save_state(checkpoint, state, step)
        journal.add(history[-1])  # after the state it resumes from
        shown = " ".join(f"{name}={value:.4f}" for name, value in values.items())
        log.info("train: epoch %d/%d %s (%.1f s, %.0f ex/s)", epoch + 1, config.epochs, shown, seconds, speed)
        if config.early_stopping_patience is not None and best.stops(epoch + 1, values, copy_weights):
            stopped_early = True
            break
    if (kept := best.kept_weights(history[-1]["epoch"] if history else 0)) is not None:
        state = (*kept, *state[2:])
        if chief:
            save_state(checkpoint, state, step)  # a restart from here resumes from the weights kept
    total_seconds = time.perf_counter() - started
    write_back(keras_model, optimizer, state)
    summary = training_summary(
        task,
        config,
        runtime,
        per_epoch=history,
        steps=(start_step, step),
        stopped_early=stopped_early,
        counts=(train_count, eval_count, steps_per_epoch),
        examples_trained=(step - start_step) * global_batch,
        seconds=total_seconds,
        earlier=journal.earlier,
        warm_started_from=started_from,
    )
    if runtime.process_count > 1:
        write_process_state(model_run, f"process-{runtime.process_index}", step, keras_model)
    if chief:
        export_model(task, keras_model, model, serving=False)  # The Trainer exports the serving model.
        model_run.write_json("history.json", summary)
        log_epochs_trained(summary)
    return summary


class Steps:
    """The jitted train and eval steps over a state `(trainable, non_trainable, optimizer, metrics)`."""

    def __init__(self, model, optimizer, loss_object, metrics) -> None:
        self.metrics = metrics

        def loss_and_outputs(trainable, non_trainable, x, y, weight, training):
            predictions, non_trainable = model.stateless_call(trainable, non_trainable, x, training=training)
            return loss_object(y, predictions, weight), (predictions, non_trainable)

        gradients = jax.value_and_grad(loss_and_outputs, has_aux=True)

        def update_metrics(metric_variables, y, predictions, weight):
            return [
                metric.stateless_update_state(variables, y, predictions, sample_weight=weight)
                for metric, variables in zip(metrics, metric_variables, strict=True)
            ]

        def train_step(state, loss_sum, batch):
            trainable, non_trainable, optimizer_variables, metric_variables = state
            x, y, weight = batch
            (loss, (predictions, non_trainable)), grads = gradients(trainable, non_trainable, x, y, weight, True)
            trainable, optimizer_variables = optimizer.stateless_apply(optimizer_variables, grads, trainable)
            metric_variables = update_metrics(metric_variables, y, predictions, weight)
            return loss_sum + loss, (trainable, non_trainable, optimizer_variables, metric_variables)

        def eval_step(state, loss_sum, batch):
            trainable, non_trainable, optimizer_variables, metric_variables = state
            x, y, weight = batch
            loss, (predictions, _) = loss_and_outputs(trainable, non_trainable, x, y, weight, False)
            return loss_sum + loss, (
                trainable,
                non_trainable,
                optimizer_variables,
                update_metrics(metric_variables, y, predictions, weight),
            )

        def train_in_block(state, loss_sum, block, index):
            batch = jax.tree.map(lambda rows: jax.lax.dynamic_index_in_dim(rows, index, keepdims=False), block)
            return train_step(state, loss_sum, batch)

        # The state is donated: XLA updates it in place instead of keeping two copies.
        self.train_in_block = jax.jit(train_in_block, donate_argnums=0)
        self.eval = jax.jit(eval_step)

    def reset_metrics(self, state):
        trainable, non_trainable, optimizer_variables, metric_variables = state
        zeros = [[jax.numpy.zeros_like(value) for value in variables] for variables in metric_variables]
        return trainable, non_trainable, optimizer_variables, zeros

    def metric_results(self, state) -> dict[str, float]:
        return {
            metric.name: float(metric.stateless_result(variables))
            for metric, variables in zip(self.metrics, state[3], strict=True)
        }


class InFlight:
    """At most IN_FLIGHT steps dispatched ahead of the devices. Unbounded, XLA's CPU collectives deadlock: 2
    processes x 2 CPU devices each waited in a different step's all-reduce, and 2 devices of one process hung in
    one (gdb: device 0's all-reduce waiting for device 1, whose part the dispatching thread never launched)."""

    def __init__(self) -> None:
        self.queue: collections.deque = collections.deque()

    def add(self, result) -> None:
        self.queue.append(result)
        if len(self.queue) > IN_FLIGHT:
            self.queue.popleft().block_until_ready()


def block_steps(element_spec, limit_bytes: int = BLOCK_BYTES) -> int:
    """How many batches a block reads: BLOCK_STEPS, fewer where they would pass `limit_bytes`, one where a batch's
    shape is not fixed (batches of different shapes cannot be stacked)."""
    batch_bytes = 0
    for spec in jax.tree.leaves(element_spec):
        if not spec.shape.is_fully_defined():
            return 1
        batch_bytes += spec.shape.num_elements() * spec.dtype.size
    return max(1, min(BLOCK_STEPS, limit_bytes // max(batch_bytes, 1)))


def batches_in_blocks(runtime, data):
    """Endless (block, index) pairs, a step each, in the order of `data`'s batches: a block of `block_steps`
    batches stacked, placed once (each batch split over the devices as alone), and the batch's place in it."""
    steps = block_steps(data.element_spec)
    indices = [place(np.int32(index), runtime.replicated) for index in range(steps)]
    for block in data.batch(steps, drop_remainder=True).as_numpy_iterator():
        placed = jax.tree.map(lambda rows: place(rows, runtime.block_split), unpack(block))
        for index in indices:
            yield placed, index


def evaluate(steps: Steps, state, batches, eval_steps: int, zero) -> dict[str, float]:
    """The eval split's loss and metrics, one pass (its last batch completed from its start); `zero` is a 0.0 placed
    as the state is, where the step sums the loss."""
    state = steps.reset_metrics(state)
    loss_sum = zero
    eval_batches, in_flight = batches("eval", False), InFlight()
    for _ in range(eval_steps):
        loss_sum, state = steps.eval(state, loss_sum, next(eval_batches))
        in_flight.add(loss_sum)
        heartbeat.beat()
    return {"loss": float(loss_sum) / eval_steps, **steps.metric_results(state)}


def current_state(model, optimizer, metrics) -> tuple:
    return (
        [variable.value for variable in model.trainable_variables],
        [variable.value for variable in model.non_trainable_variables],
        [variable.value for variable in optimizer.variables],
        [[variable.value for variable in metric.variables] for metric in metrics],
    )


def place(value, sharding):
    """A global JAX array from this process's part (the whole value when replicated)."""
    return jax.make_array_from_process_local_data(sharding, np.asarray(value))


def write_back(model, optimizer, state) -> None:
    trainable, non_trainable, optimizer_variables, _ = state
    for variables, values in (
        (model.trainable_variables, trainable),
        (model.non_trainable_variables, non_trainable),
        (optimizer.variables, optimizer_variables),
    ):
        for variable, value in zip(variables, values, strict=True):
            variable.assign(np.asarray(value))


def save_state(path: Path, state, step: int) -> None:
    """The model and optimizer state as one .npz written whole and synced, then renamed over the last one,
    which is kept as `<name>.previous.npz`: a kill or a power loss mid-write leaves one to resume from."""
    leaves = jax.tree.leaves(state[:3])
    temporary = path.with_suffix(".tmp.npz")
    with open(temporary, "wb") as file:
        np.savez(file, step=step, **{f"leaf_{index}": np.asarray(leaf) for index, leaf in enumerate(leaves)})
        file.flush()
        os.fsync(file.fileno())
    if path.exists():
        os.replace(path, previous_state(path))
    os.replace(temporary, path)
    fsync_path(path.parent)


def previous_state(path: Path) -> Path:
    return path.with_suffix(".previous.npz")


def resume(path: Path, state) -> tuple[tuple, int]:
    """The state of the newest readable checkpoint and its step; a torn one falls back to the one before."""
    for candidate in (path, previous_state(path)):
        if not candidate.exists():
            continue
        try:
            restored, step = load_state(candidate, state)
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as error:
            log.warning("train: the checkpoint %s cannot be read (%s); trying the one before", candidate, error)
            continue
        log.info("train: resumed from step %d (%s)", step, candidate)
        return restored, step
    return state, 0


def load_state(path: Path, state) -> tuple[tuple, int]:
    with np.load(path) as saved:
        structure = jax.tree.structure(state[:3])
        leaves = [saved[f"leaf_{index}"] for index in range(structure.num_leaves)]
        return (*jax.tree.unflatten(structure, leaves), state[3]), int(saved["step"])
