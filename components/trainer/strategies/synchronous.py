"""The runtime of the strategies whose replicas step together: one device, mirrored, multi-worker mirrored.

Each step runs on every replica (`strategy.run` in a `tf.function`) over that replica's part
of the global batch; the loss is averaged over the GLOBAL batch (`tf.nn.compute_average_loss`)
and the gradients all-reduced, as the TensorFlow distributed-training guides do.
"""

from __future__ import annotations

import keras
import tensorflow as tf

from kflow.components.trainer.strategies.runtime import (
    LoopParts,
    Runtime,
    gradient_step,
    input_fn,
    metric_results,
    replica_loss,
    unpack,
)
from kflow.components.util.input_autotune import untune_device_datasets
from kflow.pipeline.dsl import heartbeat


class SynchronousRuntime(Runtime):
    def __init__(self, *args, **kwargs) -> None:
        untune_device_datasets()
        super().__init__(*args, **kwargs)

    def check_batch(self, global_batch: int) -> None:
        if global_batch % self.replicas:
            raise ValueError(f"batch_size {global_batch} must be a multiple of the {self.replicas} replicas in sync")

    def build(self, parts: LoopParts) -> None:
        task, model, optimizer, global_batch = parts.task, parts.model, parts.optimizer, parts.global_batch
        make_dataset, eval_steps = parts.make_dataset, parts.eval_steps
        loss_object = task.loss()
        replicas = self.replicas
        with self.scope():
            self.train_metrics = task.metrics()
            self.train_loss = keras.metrics.Sum(name="loss_sum")
            self.batches = keras.metrics.Sum(name="batches")
            self.eval_metrics = task.metrics()
            self.eval_loss = keras.metrics.Sum(name="loss_sum")
            self.eval_batches = keras.metrics.Sum(name="batches")

        def loss_fn(y, predictions, sample_weight):
            return replica_loss(loss_object, y, predictions, sample_weight, global_batch)

        @tf.autograph.experimental.do_not_convert  # runtime.py: traced as written
        def train_step(batch):
            x, y, sample_weight = unpack(batch)
            loss, predictions = gradient_step(model, optimizer, loss_fn, x, y, sample_weight)
            self.train_loss.update_state(loss)
            self.batches.update_state(1.0 / replicas)
            for metric in self.train_metrics:
                metric.update_state(y, predictions, sample_weight)
            return loss

        @tf.autograph.experimental.do_not_convert  # runtime.py: traced as written
        def eval_step(batch):
            x, y, sample_weight = unpack(batch)
            predictions = model(x, training=False)
            self.eval_loss.update_state(loss_fn(y, predictions, sample_weight))
            self.eval_batches.update_state(1.0 / replicas)
            for metric in self.eval_metrics:
                metric.update_state(y, predictions, sample_weight)

        @tf.function
        def distributed_train(iterator, steps):
            for _ in tf.range(steps):
                self.strategy.run(train_step, args=(next(iterator),))

        @tf.function
        def distributed_eval(iterator):
            self.strategy.run(eval_step, args=(next(iterator),))

        def per_replica(context):
            return context.get_per_replica_batch_size(global_batch) if context else global_batch

        self._train, self._eval, self._eval_steps = distributed_train, distributed_eval, eval_steps
        self._train_iterator = iter(
            self.strategy.distribute_datasets_from_function(
                input_fn(make_dataset, "train", True, per_replica, parts.rows["train"])
            )
        )
        self._eval_iterator = (
            iter(
                self.strategy.distribute_datasets_from_function(
                    input_fn(make_dataset, "eval", False, per_replica, parts.rows["eval"])
                )
            )
            if eval_steps
            else None
        )

    def train_step(self, steps: int = 1) -> None:
        self._train(self._train_iterator, tf.constant(steps))

    def agree(self, value: float) -> float:
        """The replicas' mean of `value` (a collective: every worker calls it at the same step)."""
        if self.replicas == 1:
            return value
        values = self.strategy.experimental_distribute_values_from_function(lambda _: tf.constant(value, tf.float32))
        return float(self.strategy.reduce(tf.distribute.ReduceOp.MEAN, values, axis=None))

    def reset_train(self) -> None:
        for metric in [*self.train_metrics, self.train_loss, self.batches]:
            metric.reset_state()

    def train_results(self) -> dict[str, float]:
        return metric_results(self.train_metrics, self.train_loss, self.batches)

    def evaluate(self) -> dict[str, float]:
        for metric in [*self.eval_metrics, self.eval_loss, self.eval_batches]:
            metric.reset_state()
        for _ in range(self._eval_steps):
            self._eval(self._eval_iterator)
            heartbeat.beat()
        return metric_results(self.eval_metrics, self.eval_loss, self.eval_batches)
