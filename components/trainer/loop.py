"""The custom distributed training loop that drives any `Task` under any strategy.

Keras 3's `Model.fit` fails under MultiWorkerMirroredStrategy (keras-team/keras#20585) and
does not support ParameterServerStrategy, so distributed training runs this loop instead:
`strategy.run` inside a `tf.function`, per-example losses averaged over the GLOBAL batch
(`tf.nn.compute_average_loss`), as the TensorFlow distributed-training guides do.

Cluster membership comes from `TF_CONFIG` (as Kubeflow's Training Operator writes it).
The chief alone writes the model, summaries, history and the real checkpoints; other
workers save their (collective) checkpoints into a temporary folder they delete.
Checkpoints live in `working_dir/checkpoints`; a re-run with the same `working_dir`
resumes from the last one with the same step counter (`optimizer.iterations`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from kflow.components.datasets.task import Task
from kflow.pipeline.dsl.artifacts import Examples, Model, ModelRun

log = logging.getLogger("kflow.trainer")

STRATEGIES = ("default", "mirrored", "multi_worker_mirrored", "parameter_server")
OPTIMIZERS = ("adam", "adamw", "sgd")
SCHEDULES = ("constant", "cosine", "polynomial")


@dataclass
class TrainConfig:
    """Everything the loop needs besides the task and the artifacts (JSON-serializable, for worker processes)."""

    strategy: str = "default"
    epochs: int = 3
    batch_size: int = 128  # global
    steps_per_epoch: int | None = None
    optimizer: str = "adam"
    learning_rate: float = 0.001
    weight_decay: float = 0.0
    schedule: str = "constant"
    warmup_steps: int = 0
    mixed_precision: bool = False
    early_stopping_patience: int | None = None
    shuffle_buffer: int = 10000
    seed: int = 42
    checkpoint_every_steps: int | None = None
    log_every_steps: int = 100
    # Parameter-server training: the worker servers' inter-op threads (>= workers + 1, or the cluster hangs).
    extra: dict[str, Any] = field(default_factory=dict)

    def validate(self) -> None:
        if self.strategy not in STRATEGIES:
            raise ValueError(f"unknown strategy {self.strategy!r}; choose one of {', '.join(STRATEGIES)}")
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"unknown optimizer {self.optimizer!r}; choose one of {', '.join(OPTIMIZERS)}")
        if self.schedule not in SCHEDULES:
            raise ValueError(f"unknown learning-rate schedule {self.schedule!r}; choose one of {', '.join(SCHEDULES)}")
        for name in ("epochs", "batch_size", "steps_per_epoch", "checkpoint_every_steps", "log_every_steps"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name} must be at least 1, got {value}")
        if self.learning_rate <= 0:
            raise ValueError(f"learning_rate must be positive, got {self.learning_rate}")
        if self.weight_decay < 0 or self.warmup_steps < 0:
            raise ValueError("weight_decay and warmup_steps must not be negative")

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class WarmUp(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warm-up from 0 to `after(0)` over `warmup_steps`, then `after(step - warmup_steps)`."""

    def __init__(self, after, peak: float, warmup_steps: int):
        self.after = after
        self.peak = peak
        self.warmup_steps = warmup_steps

    def __call__(self, step):
        step = tf.cast(step, tf.float32)
        warm = self.peak * (step + 1.0) / float(max(self.warmup_steps, 1))
        rest = self.after(tf.maximum(step - self.warmup_steps, 0.0))
        return tf.where(step < self.warmup_steps, warm, rest)

    def get_config(self):
        return {"peak": self.peak, "warmup_steps": self.warmup_steps}


def learning_rate_schedule(config: TrainConfig, total_steps: int):
    """The configured schedule: constant, cosine or polynomial decay to 0 over the run, after a linear warm-up."""
    decay_steps = max(total_steps - config.warmup_steps, 1)
    if config.schedule == "cosine":
        after = keras.optimizers.schedules.CosineDecay(config.learning_rate, decay_steps)
    elif config.schedule == "polynomial":
        after = keras.optimizers.schedules.PolynomialDecay(config.learning_rate, decay_steps, end_learning_rate=0.0)
    else:
        if not config.warmup_steps:
            return config.learning_rate
        after = lambda step: tf.constant(config.learning_rate, tf.float32)  # noqa: E731
    if not config.warmup_steps:
        return after
    return WarmUp(after, config.learning_rate, config.warmup_steps)


def make_optimizer(config: TrainConfig, total_steps: int) -> keras.optimizers.Optimizer:
    rate = learning_rate_schedule(config, total_steps)
    if config.optimizer == "adamw":
        optimizer = keras.optimizers.AdamW(learning_rate=rate, weight_decay=config.weight_decay or 0.004)
    elif config.optimizer == "adam":
        optimizer = keras.optimizers.Adam(learning_rate=rate)
    else:
        optimizer = keras.optimizers.SGD(learning_rate=rate)
    if config.mixed_precision and keras.mixed_precision.global_policy().compute_dtype == "float16":
        optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
    return optimizer


# -- cluster ---------------------------------------------------------------------------------------------------


def tf_config() -> dict[str, Any]:
    raw = os.environ.get("TF_CONFIG")
    return json.loads(raw) if raw else {}


def is_chief(config: dict[str, Any]) -> bool:
    """Kubeflow/Keras convention: the `chief` task, else worker 0 when the cluster has no chief."""
    task = config.get("task") or {}
    cluster = config.get("cluster") or {}
    kind, index = task.get("type"), int(task.get("index", 0))
    if not task:
        return True
    if kind == "chief":
        return True
    return kind == "worker" and index == 0 and "chief" not in cluster


def make_strategy(name: str) -> tf.distribute.Strategy:
    if name == "default":
        return tf.distribute.get_strategy()
    if name == "mirrored":
        return tf.distribute.MirroredStrategy()
    if name == "multi_worker_mirrored":
        return tf.distribute.MultiWorkerMirroredStrategy()
    if name == "parameter_server":
        resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
        return tf.distribute.ParameterServerStrategy(resolver)
    raise ValueError(f"unknown strategy {name!r}; choose one of {', '.join(STRATEGIES)}")


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


def run_server(threads: int) -> None:
    """A parameter-server cluster's `worker` or `ps` task: serves until killed."""
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


# -- the loop --------------------------------------------------------------------------------------------------


def count_examples(dataset: tf.data.Dataset) -> int:
    def size(batch):
        y = batch[1] if isinstance(batch, tuple) else batch
        y = tf.nest.flatten(y)[0]
        return tf.shape(y, tf.int64)[0]

    return int(dataset.reduce(tf.constant(0, tf.int64), lambda count, batch: count + size(batch)))


def _unpack(batch):
    if isinstance(batch, (tuple, list)):
        if len(batch) == 3:
            return batch[0], batch[1], batch[2]
        if len(batch) == 2:
            return batch[0], batch[1], None
    raise ValueError("task datasets must yield (x, y) or (x, y, sample_weight) batches")


def weights_digest(model: keras.Model) -> str:
    digest = hashlib.sha256()
    for weight in model.get_weights():
        digest.update(np.ascontiguousarray(weight).tobytes())
    return digest.hexdigest()


def train(
    task: Task,
    *,
    examples: Examples,
    model: Model,
    model_run: ModelRun,
    config: TrainConfig,
    working_dir: Path | None = None,
    assets_dir: Path | None = None,
) -> dict[str, Any]:
    """Trains `task`'s model under `config.strategy` and, on the chief, exports it; returns the summary."""
    config.validate()
    keras.utils.set_random_seed(config.seed)
    previous_policy = keras.mixed_precision.global_policy()
    if config.mixed_precision:
        keras.mixed_precision.set_global_policy(
            "mixed_float16" if tf.config.list_physical_devices("GPU") else "mixed_bfloat16"
        )
    try:
        return _train(task, examples, model, model_run, config, working_dir, assets_dir)
    finally:
        keras.mixed_precision.set_global_policy(previous_policy)


def _train(
    task: Task,
    examples: Examples,
    model: Model,
    model_run: ModelRun,
    config: TrainConfig,
    working_dir: Path | None,
    assets_dir: Path | None,
) -> dict[str, Any]:
    cluster = tf_config()
    chief = is_chief(cluster)
    task_info = cluster.get("task") or {"type": "chief", "index": 0}
    me = f"{task_info['type']}-{task_info['index']}"
    strategy = make_strategy(config.strategy)
    parameter_server = config.strategy == "parameter_server"
    coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy) if parameter_server else None
    replicas = strategy.num_replicas_in_sync
    global_batch = config.batch_size
    if not parameter_server and global_batch % replicas:
        raise ValueError(f"batch_size {global_batch} must be a multiple of the {replicas} replicas in sync")
    if assets_dir is not None:
        task.load_assets(assets_dir)

    # Sizes, read once per process so every worker runs the same number of steps.
    has_eval = "eval" in examples.splits
    train_count = count_examples(
        task.dataset(examples, "train", batch_size=global_batch, training=False, seed=config.seed)
    )
    if train_count == 0:
        raise ValueError(f"the train split under {examples.split_uri('train')} holds no examples")
    eval_count = (
        count_examples(task.dataset(examples, "eval", batch_size=global_batch, training=False, seed=config.seed))
        if has_eval
        else 0
    )
    has_eval = eval_count > 0
    if config.early_stopping_patience is not None and not has_eval:
        raise ValueError(
            "early_stopping_patience needs eval examples to watch the validation metric, and there are none"
        )
    steps_per_epoch = config.steps_per_epoch or math.ceil(train_count / global_batch)
    eval_steps = math.ceil(eval_count / global_batch) if has_eval else 0
    total_steps = steps_per_epoch * config.epochs

    def dataset_fn(split: str, training: bool):
        def make(context: tf.distribute.InputContext | None = None):
            batch = (
                context.get_per_replica_batch_size(global_batch) if context and not parameter_server else global_batch
            )
            data = task.dataset(
                examples, split, batch_size=batch, training=training, seed=config.seed,
                shuffle_buffer=config.shuffle_buffer if training else 0,
            )  # fmt: skip
            if context is not None and context.num_input_pipelines > 1:
                data = data.shard(context.num_input_pipelines, context.input_pipeline_id)
            return data.repeat().prefetch(tf.data.AUTOTUNE)

        return make

    with strategy.scope():
        keras_model = task.build_model()
        optimizer = make_optimizer(config, total_steps)
        optimizer.build(keras_model.trainable_variables)
        loss_object = task.loss()
        # Under parameter_server the workers add to the train metrics with atomic increments (see
        # `accumulate`), the train loss comes back from the steps and evaluation runs on the chief.
        train_metrics = task.metrics()
        train_loss = keras.metrics.Sum(name="loss_sum")
        batches = keras.metrics.Sum(name="batches")
        if not parameter_server:
            eval_metrics = task.metrics()
            eval_loss = keras.metrics.Sum(name="loss_sum")
            eval_batches = keras.metrics.Sum(name="batches")
        checkpoint = tf.train.Checkpoint(model=keras_model, optimizer=optimizer)
    if parameter_server:
        eval_metrics = task.metrics()
        eval_loss = keras.metrics.Sum(name="loss_sum")
        eval_batches = keras.metrics.Sum(name="batches")

    def replica_loss(y, predictions, sample_weight):
        per_example = loss_object(y, predictions, sample_weight)
        per_example = tf.cast(per_example, tf.float32)
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
            per_example, global_batch_size=global_batch if not parameter_server else tf.shape(per_example)[0]
        )

    def train_step(batch):
        x, y, sample_weight = _unpack(batch)
        with tf.GradientTape() as tape:
            predictions = keras_model(x, training=True)
            loss = replica_loss(y, predictions, sample_weight)
            if keras_model.losses:
                loss += tf.nn.scale_regularization_loss(tf.add_n(keras_model.losses))
            scaled = optimizer.scale_loss(loss) if hasattr(optimizer, "scale_loss") else loss
        gradients = tape.gradient(scaled, keras_model.trainable_variables)
        optimizer.apply_gradients(zip(gradients, keras_model.trainable_variables, strict=True))
        if parameter_server:
            for metric in train_metrics:
                accumulate(metric, y, predictions, sample_weight)
            return loss
        train_loss.update_state(loss)
        batches.update_state(1.0 / replicas)
        for metric in train_metrics:
            metric.update_state(y, predictions, sample_weight)
        return loss

    def eval_step(batch):
        x, y, sample_weight = _unpack(batch)
        predictions = keras_model(x, training=False)
        eval_loss.update_state(replica_loss(y, predictions, sample_weight))
        eval_batches.update_state(1.0 / (1 if parameter_server else replicas))
        for metric in eval_metrics:
            metric.update_state(y, predictions, sample_weight)

    @tf.function
    def distributed_train(iterator):
        return strategy.run(train_step, args=(next(iterator),))

    @tf.function
    def distributed_eval(iterator):
        strategy.run(eval_step, args=(next(iterator),))

    @tf.function
    def chief_eval(batch):
        x, y, sample_weight = _unpack(batch)
        predictions = keras_model(x, training=False)
        per_example = tf.cast(loss_object(y, predictions, sample_weight), tf.float32)
        if sample_weight is not None:
            weight = tf.reduce_sum(tf.cast(sample_weight, tf.float32) * tf.ones_like(per_example))
            eval_loss.update_state(tf.reduce_sum(per_example) / tf.maximum(weight, 1e-9))
        else:
            eval_loss.update_state(tf.reduce_mean(per_example))
        eval_batches.update_state(1.0)
        for metric in eval_metrics:
            metric.update_state(y, predictions, sample_weight)

    if parameter_server:
        train_iter = iter(coordinator.create_per_worker_dataset(dataset_fn("train", True)))
        eval_iter = None
    else:
        train_iter = iter(strategy.distribute_datasets_from_function(dataset_fn("train", True)))
        eval_iter = iter(strategy.distribute_datasets_from_function(dataset_fn("eval", False))) if has_eval else None

    # Checkpoints: the chief's manager in working_dir; other MWMS workers write theirs into a temp dir.
    temp_dirs: list[Path] = []
    if working_dir is None:
        working_dir = Path(tempfile.mkdtemp(prefix="kflow-train-"))
        temp_dirs.append(working_dir)
    checkpoint_dir = Path(working_dir) / "checkpoints"
    if chief:
        save_dir = checkpoint_dir
    else:
        save_dir = Path(tempfile.mkdtemp(prefix=f"kflow-ckpt-{me}-"))
        temp_dirs.append(save_dir)
    manager = tf.train.CheckpointManager(checkpoint, str(save_dir), max_to_keep=2)
    latest = tf.train.latest_checkpoint(str(checkpoint_dir))
    start_step = 0
    if latest:
        checkpoint.restore(latest).assert_existing_objects_matched()
        # The checkpoint number is the loop's step counter: under parameter_server, concurrent workers'
        # increments of optimizer.iterations can be lost, so it is not used as the counter there.
        start_step = int(latest.rsplit("-", 1)[1])
        log.info("train: %s resumed from step %d (%s)", me, start_step, latest)

    def save(step: int) -> None:
        if parameter_server and not chief:
            return
        manager.save(checkpoint_number=step)

    writers = {}
    if chief:
        writers = {
            "train": tf.summary.create_file_writer(str(model_run.log_dir / "train")),
            "validation": tf.summary.create_file_writer(str(model_run.log_dir / "validation")),
        }

    def result(metrics, loss_sum, count) -> dict[str, float]:
        n = float(count.result())
        values = {"loss": float(loss_sum.result()) / max(n, 1.0)}
        values.update({metric.name: float(metric.result()) for metric in metrics})
        return values

    log.info(
        "train: %s %s for %d epochs of %d steps, global batch %d, %s(lr=%g, %s) on %d replica(s)",
        me, task.model_name, config.epochs, steps_per_epoch, global_batch, config.optimizer, config.learning_rate,
        config.schedule, replicas,
    )  # fmt: skip
    history: list[dict[str, float]] = []
    best, waited = None, 0
    step = start_step
    started = time.perf_counter()
    trained_steps = 0
    stopped_early = False
    try:
        for epoch in range(start_step // steps_per_epoch, config.epochs):
            epoch_started = time.perf_counter()
            epoch_steps = 0
            for metric in [*train_metrics, train_loss, batches]:
                metric.reset_state()
            step_losses = []
            while step < (epoch + 1) * steps_per_epoch:
                if parameter_server:
                    step_losses.append(coordinator.schedule(distributed_train, args=(train_iter,)))
                else:
                    distributed_train(train_iter)
                step += 1
                epoch_steps += 1
                if config.checkpoint_every_steps and step % config.checkpoint_every_steps == 0:
                    if parameter_server:
                        coordinator.join()
                    save(step)
                if epoch_steps % config.log_every_steps == 0 and step % steps_per_epoch:
                    if parameter_server:
                        coordinator.join()
                        shown_loss = float(np.mean([float(value.fetch()) for value in step_losses]))
                    else:
                        shown_loss = result([], train_loss, batches)["loss"]
                    log.info(
                        "train: epoch %d/%d step %d/%d loss=%.4f",
                        epoch + 1, config.epochs, step - epoch * steps_per_epoch, steps_per_epoch, shown_loss,
                    )  # fmt: skip
            if parameter_server:
                coordinator.join()
            train_seconds = time.perf_counter() - epoch_started
            trained_steps += epoch_steps
            if parameter_server:
                values = {"loss": float(np.mean([float(value.fetch()) for value in step_losses]))}
                values.update({metric.name: float(metric.result()) for metric in train_metrics})
            else:
                values = result(train_metrics, train_loss, batches)
            if has_eval:
                for metric in [*eval_metrics, eval_loss, eval_batches]:
                    metric.reset_state()
                if parameter_server:
                    for batch in task.dataset(
                        examples, "eval", batch_size=global_batch, training=False, seed=config.seed
                    ):
                        chief_eval(batch)
                else:
                    for _ in range(eval_steps):
                        distributed_eval(eval_iter)
                values.update(
                    {f"val_{name}": value for name, value in result(eval_metrics, eval_loss, eval_batches).items()}
                )
            seconds = time.perf_counter() - epoch_started
            speed = epoch_steps * global_batch / max(train_seconds, 1e-9)
            history.append(
                {"epoch": epoch + 1, **values, "step": step, "seconds": round(seconds, 3),
                 "examples_per_second": round(speed, 1)}
            )  # fmt: skip
            save(step)
            shown = " ".join(f"{name}={value:.4f}" for name, value in values.items())
            log.info("train: epoch %d/%d %s (%.1f s, %.0f ex/s)", epoch + 1, config.epochs, shown, seconds, speed)
            for kind, writer in writers.items():
                with writer.as_default(step=epoch + 1):
                    for name, value in values.items():
                        if name.startswith("val_") == (kind == "validation"):
                            tf.summary.scalar(name.removeprefix("val_"), value)
            if config.early_stopping_patience is not None:
                current = values.get(task.monitor)
                if current is None:
                    raise ValueError(f"task monitor {task.monitor!r} is not among the metrics {sorted(values)}")
                better = best is None or (current < best if task.monitor_mode == "min" else current > best)
                best, waited = (current, 0) if better else (best, waited + 1)
                if waited >= config.early_stopping_patience:
                    log.info("train: early stop after epoch %d (%s did not improve for %d epochs)", epoch + 1,
                             task.monitor, waited)  # fmt: skip
                    stopped_early = True
                    break
        total_seconds = time.perf_counter() - started
        examples_per_second = trained_steps * global_batch / max(total_seconds, 1e-9)
        final = {
            "me": me,
            "step": int(optimizer.iterations.numpy()) if not parameter_server else step,
            "weights_sha256": weights_digest(keras_model),
        }
        (model_run.path / "workers").mkdir(parents=True, exist_ok=True)
        (model_run.path / "workers" / f"{me}.json").write_text(json.dumps(final) + "\n")
        summary = {
            "epochs": len(history),
            "per_epoch": history,
            "start_step": start_step,
            "final_step": step,
            "stopped_early": stopped_early,
            "train_examples": train_count,
            "eval_examples": eval_count,
            "steps_per_epoch": steps_per_epoch,
            "examples_trained": trained_steps * global_batch,
            "train_seconds": round(total_seconds, 3),
            "examples_per_second": round(examples_per_second, 1),
            "batch_size": global_batch,
            "strategy": config.strategy,
            "replicas": replicas,
            "task": task.name,
            "model_name": task.model_name,
        }
        if chief:
            export_model(task, keras_model, model)
            model_run.write_json("history.json", summary)
            for writer in writers.values():
                writer.close()
            log.info("train: %d epochs in %.1f s (%.0f ex/s)", len(history), total_seconds, examples_per_second)
        return summary
    finally:
        for folder in temp_dirs:
            shutil.rmtree(folder, ignore_errors=True)


def export_model(task: Task, trained: keras.Model, model: Model) -> None:
    """Saves a plain (strategy-free) copy of `trained` as model.keras and the serving SavedModel."""
    plain = task.build_model()
    plain.set_weights(trained.get_weights())
    model.path.mkdir(parents=True, exist_ok=True)
    plain.save(model.keras_file)
    plain.export(str(model.serving_uri), format="tf_saved_model", verbose=False)
