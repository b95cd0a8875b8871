"""The interface between the custom training loop and a strategy's TensorFlow side.

The loop (kflow.components.trainer.loop) owns epochs, checkpoints, early stopping, logging
and history; a `Runtime` owns how one step runs across devices and processes: the
`tf.distribute.Strategy`, the distributed datasets, the step functions, and where the
metrics accumulate. `SynchronousRuntime` (synchronous.py) serves the strategies whose
replicas step together; parameter_server.py has its own.

The step functions a strategy runs on its replicas are traced as written, not converted by AutoGraph
(`tf.autograph.experimental.do_not_convert`): their branches test Python values only (a sample weight or none,
the model's extra losses), and converting them, with `gradient_step` and `replica_loss` below, took about 1 s of
each MultiWorkerMirrored worker's first step on this project's 2-core VM (2.0 → 1.1 s; bench/README.md). Keras'
own `fit` does not convert its steps either, so a user's metric or loss behaves alike in both.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import keras
import tensorflow as tf

# (split, training, batch size) → the task's batched dataset of that split, one pass.
MakeDataset = Callable[[str, bool, int], tf.data.Dataset]


@dataclass(frozen=True)
class LoopParts:
    """What the custom loop (loop.py) gives a strategy's runtime to build its step functions from."""

    task: Any  # the dataset's Task: its loss and metrics
    model: keras.Model
    optimizer: keras.optimizers.Optimizer
    global_batch: int
    make_dataset: MakeDataset
    eval_steps: int
    rows: dict[str, int]  # {split: its records}, as the ingest counted them


def unpack(batch):
    if isinstance(batch, (tuple, list)):
        if len(batch) == 3:
            return batch[0], batch[1], batch[2]
        if len(batch) == 2:
            return batch[0], batch[1], None
    raise ValueError("task datasets must yield (x, y) or (x, y, sample_weight) batches")


def input_fn(make_dataset: MakeDataset, split: str, training: bool, batch_size: Callable[[Any], int], rows: int):
    """A dataset function for `distribute_datasets_from_function`: each input pipeline reads its shard of the
    split's batches, repeated (the loop counts steps, not passes). A split of fewer batches than pipelines (`rows`
    records: a small table's eval split of 15 rows, one batch, under two workers) is read whole by each: sharded,
    a pipeline got no batch, and its worker's first step ended the run (`OutOfRangeError` at `IteratorGetNext`)."""

    def make(context: tf.distribute.InputContext | None = None) -> tf.data.Dataset:
        size = batch_size(context)
        data = make_dataset(split, training, size)
        pipelines = context.num_input_pipelines if context is not None else 1
        if pipelines > 1 and -(-rows // size) >= pipelines:
            data = data.shard(pipelines, context.input_pipeline_id)
        return data.repeat().prefetch(tf.data.AUTOTUNE)

    return make


def replica_loss(loss_object, y, predictions, sample_weight, global_batch: int | None) -> tf.Tensor:
    """The replica's share of the batch loss: per-example losses averaged over the GLOBAL batch
    (`global_batch=None`: over this batch), or a weighted loss's sum over the global weight."""
    per_example = tf.cast(loss_object(y, predictions, sample_weight), tf.float32)
    if per_example.shape.rank == 0 and sample_weight is None:
        # A loss function of the user's own that averages its batch itself (keras.io's focal loss: reduce_mean):
        # this batch's mean already (compute_average_loss refuses a number of rank 0).
        local = tf.cast(tf.shape(predictions)[0], tf.float32)
        return per_example * local / (tf.cast(global_batch, tf.float32) if global_batch is not None else local)
    if sample_weight is not None:
        # A weighted mean over the global batch (e.g. masked tokens): divide by the global weight sum.
        weight = tf.reduce_sum(tf.cast(sample_weight, tf.float32) * tf.ones_like(per_example))
        context = tf.distribute.get_replica_context()
        if context is not None and context.num_replicas_in_sync > 1:
            weight = context.all_reduce(tf.distribute.ReduceOp.SUM, weight)
        return tf.reduce_sum(per_example) / tf.maximum(weight, 1e-9)
    if per_example.shape.rank and per_example.shape.rank > 1:
        per_example = tf.reduce_mean(per_example, axis=list(range(1, per_example.shape.rank)))
    return tf.nn.compute_average_loss(
        per_example, global_batch_size=global_batch if global_batch is not None else tf.shape(per_example)[0]
    )


def gradient_step(model: keras.Model, optimizer: keras.optimizers.Optimizer, loss_fn, x, y, sample_weight):
    """One optimisation step on a batch; returns (loss, predictions)."""
    with tf.GradientTape() as tape:
        predictions = model(x, training=True)
        loss = loss_fn(y, predictions, sample_weight)
        if model.losses:
            loss += tf.nn.scale_regularization_loss(tf.add_n(model.losses))
        scaled = optimizer.scale_loss(loss) if hasattr(optimizer, "scale_loss") else loss
    gradients = tape.gradient(scaled, model.trainable_variables)
    optimizer.apply_gradients(zip(gradients, model.trainable_variables, strict=True))
    return loss, predictions


class Runtime:
    """Base class; subclasses implement the methods the loop calls, in this order:

    `build` once, after the loop built the model and optimizer in `scope()`; then per epoch
    `reset_train`, `train_step` × calls of steps_per_execution steps (`wait` before anything reads the model's state),
    `train_results`, `evaluate`. A strategy whose cluster has roles that only serve (the
    workers and parameter servers of a PS cluster) implements `serve` for them.
    """

    def __init__(self, config: Any = None, model_name: str | None = None) -> None:
        self.config, self.model_name = config, model_name  # the TrainConfig and model, for strategies that need them
        self.strategy = self.make()

    @classmethod
    def configure(cls, devices: int | None) -> None:
        """Called once per process before anything touches TensorFlow's devices (`trainer.devices`)."""
        if devices is not None:
            raise ValueError(f"trainer.devices is for the mirrored strategy, not {cls.__module__.rsplit('.', 1)[-1]}")

    def make(self) -> tf.distribute.Strategy:
        raise NotImplementedError

    @property
    def replicas(self) -> int:
        return self.strategy.num_replicas_in_sync

    def scope(self):
        return self.strategy.scope()

    def check_batch(self, global_batch: int) -> None:
        """Refuses a global batch the strategy cannot divide."""

    # model.fit's side (kflow.components.trainer.fit): which process writes, what each process reads.
    process_index: int = 0
    process_count: int = 1

    def weight_layouts(self, model: keras.Model) -> dict[str, list[str | None]]:
        """{weight path: the mesh axis each dimension is sharded over, or None}; {} when nothing is sharded."""
        return {}

    def unsharded(self):
        """A context in which models are built plain, without the strategy (to export a copy)."""
        return contextlib.nullcontext()

    def fit_batches(self, make_dataset: MakeDataset, split: str, training: bool, global_batch: int) -> tf.data.Dataset:
        """The endless batches `model.fit` reads in this process (the strategy splits them over replicas)."""
        return make_dataset(split, training, global_batch).repeat()

    def build(self, parts: LoopParts) -> None:
        """The custom loop's step functions of this strategy, from the model, its optimizer and the data."""
        raise NotImplementedError

    @classmethod
    def serve(cls, cluster: dict[str, Any], op_libraries: tuple[str, ...]) -> None:
        raise NotImplementedError(f"{cls.__module__} has no serving roles")

    @classmethod
    def leave(cls, chief: bool, end_process: bool = False) -> None:
        """Called in each training process after its training returned: ends its part in the cluster (with
        `end_process`, the process may end here: it has nothing left to do)."""

    def train_step(self, steps: int = 1) -> None:
        """Runs `steps` train steps in one call (trainer.steps_per_execution)."""
        raise NotImplementedError

    def wait(self) -> None:
        """Blocks until every step scheduled so far has run."""

    def agree(self, value: float) -> float:
        """A value every training process of the cluster agrees on, from the one each measured (the loop's choice
        of steps per call): the same value where one process decides."""
        return value

    def reset_train(self) -> None:
        raise NotImplementedError

    def train_results(self) -> dict[str, float]:
        """The epoch's train loss and task metrics so far."""
        raise NotImplementedError

    def evaluate(self) -> dict[str, float]:
        """The eval split's loss and task metrics."""
        raise NotImplementedError

    def saves_checkpoints(self, chief: bool) -> bool:
        """Whether this process calls the checkpoint manager (MWMS workers must, collectively)."""
        return True

    def step_counter(self, optimizer: keras.optimizers.Optimizer, loop_step: int) -> int:
        return int(optimizer.iterations.numpy())


def metric_results(metrics: list[keras.metrics.Metric], loss_sum: keras.metrics.Metric, batches) -> dict[str, float]:
    count = float(batches.result())
    values = {"loss": float(loss_sum.result()) / max(count, 1.0)}
    values.update({metric.name: float(metric.result()) for metric in metrics})
    return values
