"""`parameter_server`: `tf.distribute.ParameterServerStrategy`, a chief coordinating workers and parameter servers.

The chief (the coordinator) runs the loop and schedules each step on whichever worker is
free (`ClusterCoordinator.schedule`); variables live on the parameter servers; the workers
and parameter servers only serve (`serve`). Evaluation runs on the chief. Steps are
asynchronous, so the loss of a step is averaged over that worker's own batch, and the step
counter is the loop's (concurrent increments of `optimizer.iterations` can be lost).
"""

from __future__ import annotations

import importlib
import logging
from typing import Any

import keras
import tensorflow as tf

from kflow.components.trainer.strategies.cluster_env import tf_config
from kflow.components.trainer.strategies.runtime import (
    LoopParts,
    MakeDataset,
    gradient_step,
    metric_results,
    replica_loss,
    unpack,
)
from kflow.components.trainer.strategies.runtime import Runtime as BaseRuntime
from kflow.pipeline.dsl import heartbeat

log = logging.getLogger("kflow.trainer")


def accumulate(metric: keras.metrics.Metric, *args: Any) -> None:
    """Adds one batch to `metric` with one atomic `assign_add` of each variable's increment.

    Keras 3's `Variable.assign_add` is `assign(self + value)`: when two parameter-server
    workers update the same PS-placed metric variable, one of the updates can be lost.
    The increments are the metric's stateless update from a zero state, which is exact for
    accumulator metrics (sums, counts, confusion counts: Keras' mean-wrapped metrics,
    accuracy, AUC — every metric the tasks use); `assign_add` on the underlying
    `tf.Variable` runs on the PS under the variable's lock.
    """
    zeros = [tf.zeros(variable.shape, variable.dtype) for variable in metric.variables]
    for variable, increment in zip(metric.variables, metric.stateless_update_state(zeros, *args), strict=True):
        if increment is not variable:
            variable.value.assign_add(increment)


def worker_batches(make_dataset: MakeDataset, global_batch: int, workers: int, index) -> tf.data.Dataset:
    """A worker's share of the train batches: every `workers`-th batch of the endlessly repeated split, from `index`.

    ParameterServerStrategy gives every worker the same input context and each worker's pipeline shuffles with the
    same seed, so unsharded the workers would read the same batches in the same order: per epoch, the cluster
    would train on half the split's batches, each twice (TensorFlow's `experimental_get_current_worker_index`
    shards by worker for that reason). Sharding the endless stream rather than each pass leaves no worker without
    batches however few a pass holds.
    """
    data = make_dataset("train", True, global_batch).repeat()
    if workers > 1:
        data = data.shard(workers, index)
    return data.prefetch(tf.data.AUTOTUNE)


class Runtime(BaseRuntime):
    def __init__(self, config=None, model_name=None) -> None:
        super().__init__(config, model_name)
        self.coordinator = tf.distribute.coordinator.ClusterCoordinator(self.strategy)

    def make(self) -> tf.distribute.Strategy:
        return tf.distribute.ParameterServerStrategy(tf.distribute.cluster_resolver.TFConfigClusterResolver())

    @classmethod
    def serve(cls, cluster: dict[str, Any], op_libraries: tuple[str, ...]) -> None:
        """A worker or ps task: a `tf.distribute.Server` until the process is stopped.

        Worker servers need `inter_op_parallelism_threads` ≥ workers + 1, or a small cluster
        hangs; they import the task's op libraries first, as the coordinator ships them dataset
        graphs that use those ops (tensorflow-text's for the BERT MLM).
        """
        for module in op_libraries:
            importlib.import_module(module)
        threads = max(len(cluster["cluster"].get("worker", [])) + 1, 4)
        resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
        server = tf.distribute.Server(
            resolver.cluster_spec(),
            job_name=resolver.task_type,
            task_index=resolver.task_id,
            protocol=resolver.rpc_layer or "grpc",
            start=True,
            config=tf.compat.v1.ConfigProto(inter_op_parallelism_threads=threads),
        )
        log.info("server: %s %d serving", resolver.task_type, resolver.task_id)
        server.join()

    def build(self, parts: LoopParts) -> None:
        task, model, optimizer, global_batch = parts.task, parts.model, parts.optimizer, parts.global_batch
        make_dataset, eval_steps = parts.make_dataset, parts.eval_steps
        loss_object = task.loss()
        with self.scope():
            self.train_metrics = task.metrics()  # on the PS, added to with atomic increments
        self.eval_metrics = task.metrics()  # on the chief, which evaluates
        self.eval_loss = keras.metrics.Sum(name="loss_sum")
        self.eval_batches = keras.metrics.Sum(name="batches")
        self._step_losses: list[Any] = []

        def loss_fn(y, predictions, sample_weight):
            return replica_loss(loss_object, y, predictions, sample_weight, global_batch=None)

        @tf.autograph.experimental.do_not_convert  # runtime.py: traced as written
        def train_step(batch):
            x, y, sample_weight = unpack(batch)
            loss, predictions = gradient_step(model, optimizer, loss_fn, x, y, sample_weight)
            for metric in self.train_metrics:
                accumulate(metric, y, predictions, sample_weight)
            return loss

        @tf.function
        def distributed_train(iterator, steps):
            # Several steps per scheduled function (as TensorFlow's parameter-server tutorial sets Keras'
            # steps_per_execution): the coordinator's dispatch per call was a fifth of a small model's step here.
            total = tf.constant(0.0)
            for _ in tf.range(steps):
                total += tf.cast(self.strategy.run(train_step, args=(next(iterator),)), tf.float32)
            return total

        @tf.function(autograph=False)  # runtime.py: traced as written
        def chief_eval(batch):
            x, y, sample_weight = unpack(batch)
            predictions = model(x, training=False)
            per_example = tf.cast(loss_object(y, predictions, sample_weight), tf.float32)
            if sample_weight is not None:
                weight = tf.reduce_sum(tf.cast(sample_weight, tf.float32) * tf.ones_like(per_example))
                self.eval_loss.update_state(tf.reduce_sum(per_example) / tf.maximum(weight, 1e-9))
            else:
                self.eval_loss.update_state(tf.reduce_mean(per_example))
            self.eval_batches.update_state(1.0)
            for metric in self.eval_metrics:
                metric.update_state(y, predictions, sample_weight)

        self._train, self._chief_eval = distributed_train, chief_eval
        self._eval_data = (lambda: make_dataset("eval", False, global_batch)) if eval_steps else None
        workers = len(tf_config()["cluster"].get("worker", []))

        def per_worker_dataset():  # built on each worker, where the index is that worker's
            index = tf.distribute.coordinator.experimental_get_current_worker_index()
            return worker_batches(make_dataset, global_batch, workers, index)

        self._train_iterator = iter(self.coordinator.create_per_worker_dataset(per_worker_dataset))

    def train_step(self, steps: int = 1) -> None:
        loss_sum = self.coordinator.schedule(self._train, args=(self._train_iterator, tf.constant(steps)))
        self._step_losses.append((loss_sum, steps))

    def wait(self) -> None:
        self.coordinator.join()

    def reset_train(self) -> None:
        for metric in self.train_metrics:
            metric.reset_state()
        self._step_losses = []

    def train_results(self) -> dict[str, float]:
        self.wait()
        steps = sum(count for _, count in self._step_losses)
        values = {"loss": sum(float(loss_sum.fetch()) for loss_sum, _ in self._step_losses) / max(steps, 1)}
        values.update({metric.name: float(metric.result()) for metric in self.train_metrics})
        return values

    def evaluate(self) -> dict[str, float]:
        for metric in [*self.eval_metrics, self.eval_loss, self.eval_batches]:
            metric.reset_state()
        for batch in self._eval_data():
            self._chief_eval(batch)
            heartbeat.beat()
        return metric_results(self.eval_metrics, self.eval_loss, self.eval_batches)

    def saves_checkpoints(self, chief: bool) -> bool:
        return chief

    def step_counter(self, optimizer: keras.optimizers.Optimizer, loop_step: int) -> int:
        return loop_step
