"""The custom training loop that drives any `Task` under any strategy's runtime.

Keras 3's `Model.fit` fails under MultiWorkerMirroredStrategy (keras-team/keras#20585) and
does not support ParameterServerStrategy, so those strategies train with this loop. The
loop owns epochs, checkpoints, early stopping, summaries and the history; the strategy's
`Runtime` (kflow.components.trainer.strategies) owns how a step runs across devices and
processes.

Cluster membership comes from `TF_CONFIG` (as Kubeflow's Training Operator writes it).
The chief alone writes the model, summaries, history and the real checkpoints; other
workers save their (collective) checkpoints into a temporary folder they delete.
Checkpoints live in `working_dir/checkpoints`; a re-run with the same `working_dir`
resumes from the last one with the same step counter.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from kflow.components.datasets.task import Task
from kflow.components.datasets.user_module import MODULE_FILE, load_module
from kflow.components.trainer.checkpoints import restore_newest_readable
from kflow.components.trainer.config import TrainConfig
from kflow.components.trainer.optimizers import make_optimizer
from kflow.components.trainer.strategies import get_strategy
from kflow.components.trainer.strategies.runtime import MakeDataset, Runtime, is_chief, tf_config
from kflow.components.util.progress import EpochProgress
from kflow.pipeline.dsl.artifacts import Examples, Model, ModelRun
from kflow.pipeline.dsl.scratch import scratch_dir

log = logging.getLogger("kflow.trainer")


def count_examples(dataset: tf.data.Dataset) -> int:
    def size(batch):
        y = batch[1] if isinstance(batch, tuple) else batch
        y = tf.nest.flatten(y)[0]
        return tf.shape(y, tf.int64)[0]

    return int(dataset.reduce(tf.constant(0, tf.int64), lambda count, batch: count + size(batch)))


def dataset_factory(task: Task, examples: Examples, config: TrainConfig) -> MakeDataset:
    """`make_dataset(split, training, batch_size)`: the task's batches of a split, shuffled only for training."""

    def make_dataset(split: str, training: bool, batch_size: int = config.batch_size) -> tf.data.Dataset:
        return task.dataset(
            examples,
            split,
            batch_size=batch_size,
            training=training,
            seed=config.seed,
            shuffle_buffer=config.shuffle_buffer if training else 0,
        )

    return make_dataset


def split_sizes(make_dataset: MakeDataset, examples: Examples, config: TrainConfig) -> tuple[int, int, int]:
    """(train examples, eval examples, steps per epoch), read once per process so every worker runs as many steps."""
    train_count = count_examples(make_dataset("train", False, config.batch_size))
    if train_count == 0:
        raise ValueError(f"the train split under {examples.split_uri('train')} holds no examples")
    eval_count = count_examples(make_dataset("eval", False, config.batch_size)) if "eval" in examples.splits else 0
    if config.early_stopping_patience is not None and not eval_count:
        raise ValueError(
            "early_stopping_patience needs eval examples to watch the validation metric, and there are none"
        )
    return train_count, eval_count, config.steps_per_epoch or math.ceil(train_count / config.batch_size)


def weights_digest(model: keras.Model) -> str:
    digest = hashlib.sha256()
    for weight in model.get_weights():
        digest.update(np.ascontiguousarray(weight).tobytes())
    return digest.hexdigest()


def training_summary(
    task: Task,
    config: TrainConfig,
    runtime: Runtime,
    *,
    per_epoch: list[dict[str, float]],
    steps: tuple[int, int],
    stopped_early: bool,
    counts: tuple[int, int, int],
    examples_trained: int,
    seconds: float,
    processes: int = 1,
) -> dict[str, Any]:
    """The run's `history.json`, the same keys under every training path.

    `steps`: (start step, final step); `counts`: (train examples, eval examples, steps per epoch)."""
    train_count, eval_count, steps_per_epoch = counts
    return {
        "epochs": len(per_epoch),
        "per_epoch": per_epoch,
        "start_step": steps[0],
        "final_step": steps[1],
        "stopped_early": stopped_early,
        "train_examples": train_count,
        "eval_examples": eval_count,
        "steps_per_epoch": steps_per_epoch,
        "examples_trained": examples_trained,
        "train_seconds": round(seconds, 3),
        "examples_per_second": round(examples_trained / max(seconds, 1e-9), 1),
        "batch_size": config.batch_size,
        "strategy": config.strategy,
        "replicas": runtime.replicas,
        "processes": processes,
        "backend": keras.backend.backend(),
        "task": task.name,
        "model_name": task.model_name,
    }


def write_process_state(model_run: ModelRun, me: str, step: int, model: keras.Model) -> None:
    """`workers/<me>.json`: the step and weights digest this process of a cluster ended with."""
    final = {"me": me, "step": step, "weights_sha256": weights_digest(model)}
    (model_run.path / "workers").mkdir(parents=True, exist_ok=True)
    (model_run.path / "workers" / f"{me}.json").write_text(json.dumps(final) + "\n")


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
    with precision_policy(config):
        runtime: Runtime = get_strategy(config.strategy).runtime_class()(config, task.model_name)
        return _train(task, runtime, examples, model, model_run, config, working_dir, assets_dir)


@contextmanager
def precision_policy(config: TrainConfig) -> Iterator[None]:
    """Validates `config`, seeds Keras and sets its mixed-precision policy for one training run."""
    config.validate()
    keras.utils.set_random_seed(config.seed)
    previous_policy = keras.mixed_precision.global_policy()
    if config.mixed_precision:
        keras.mixed_precision.set_global_policy(
            "mixed_float16" if tf.config.list_physical_devices("GPU") else "mixed_bfloat16"
        )
    try:
        yield
    finally:
        keras.mixed_precision.set_global_policy(previous_policy)


def _train(
    task: Task,
    runtime: Runtime,
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
    global_batch = config.batch_size
    runtime.check_batch(global_batch)
    if assets_dir is not None:
        task.load_assets(assets_dir)

    make_dataset = dataset_factory(task, examples, config)

    train_count, eval_count, steps_per_epoch = split_sizes(make_dataset, examples, config)
    eval_steps = math.ceil(eval_count / global_batch)
    total_steps = steps_per_epoch * config.epochs

    with runtime.scope():
        keras_model = task.build_model()
        optimizer = make_optimizer(config, total_steps)
        optimizer.build(keras_model.trainable_variables)
        checkpoint = tf.train.Checkpoint(model=keras_model, optimizer=optimizer)
    runtime.build(
        task=task,
        model=keras_model,
        optimizer=optimizer,
        global_batch=global_batch,
        make_dataset=make_dataset,
        eval_steps=eval_steps,
    )

    # Checkpoints: the chief's manager in working_dir; other MWMS workers write theirs into a temp dir.
    temp_dirs: list[Path] = []
    if working_dir is None:
        working_dir = Path(scratch_dir("train"))
        temp_dirs.append(working_dir)
    checkpoint_dir = Path(working_dir) / "checkpoints"
    if chief:
        save_dir = checkpoint_dir
    else:
        save_dir = Path(scratch_dir("ckpt"))
        temp_dirs.append(save_dir)
    manager = tf.train.CheckpointManager(checkpoint, str(save_dir), max_to_keep=2)
    start_step = restore_newest_readable(checkpoint, checkpoint_dir, me)

    def save(step: int) -> None:
        if runtime.saves_checkpoints(chief):
            manager.save(checkpoint_number=step)

    writers = {}
    if chief:
        writers = {
            "train": tf.summary.create_file_writer(str(model_run.log_dir / "train")),
            "validation": tf.summary.create_file_writer(str(model_run.log_dir / "validation")),
        }

    log.info(
        "train: %s %s for %d epochs of %d steps, global batch %d, %s(lr=%g, %s) on %d replica(s)",
        me,
        task.model_name,
        config.epochs,
        steps_per_epoch,
        global_batch,
        config.optimizer,
        config.learning_rate,
        config.schedule,
        runtime.replicas,
    )
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
            runtime.reset_train()
            progress = EpochProgress(epoch + 1, config.epochs, steps_per_epoch, global_batch, config.log_every_steps)
            while step < (epoch + 1) * steps_per_epoch:
                runtime.train_step()
                step += 1
                epoch_steps += 1
                if config.checkpoint_every_steps and step % config.checkpoint_every_steps == 0:
                    runtime.wait()
                    save(step)
                progress.update(step - epoch * steps_per_epoch, lambda: runtime.train_results()["loss"])
            runtime.wait()
            progress.close()
            train_seconds = time.perf_counter() - epoch_started
            trained_steps += epoch_steps
            values = runtime.train_results()
            if eval_steps:
                values.update({f"val_{name}": value for name, value in runtime.evaluate().items()})
            seconds = time.perf_counter() - epoch_started
            speed = epoch_steps * global_batch / max(train_seconds, 1e-9)
            history.append(
                {
                    "epoch": epoch + 1,
                    **values,
                    "step": step,
                    "seconds": round(seconds, 3),
                    "examples_per_second": round(speed, 1),
                }
            )
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
                    log.info(
                        "train: early stop after epoch %d (%s did not improve for %d epochs)",
                        epoch + 1,
                        task.monitor,
                        waited,
                    )
                    stopped_early = True
                    break
        total_seconds = time.perf_counter() - started
        examples_per_second = trained_steps * global_batch / max(total_seconds, 1e-9)
        write_process_state(model_run, me, runtime.step_counter(optimizer, step), keras_model)
        summary = training_summary(
            task,
            config,
            runtime,
            per_epoch=history,
            steps=(start_step, step),
            stopped_early=stopped_early,
            counts=(train_count, eval_count, steps_per_epoch),
            examples_trained=trained_steps * global_batch,
            seconds=total_seconds,
            processes=sum(len(cluster.get("cluster", {}).get(role, [])) for role in ("chief", "worker")) or 1,
        )
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


def export_model(task: Task, trained: keras.Model, model: Model, *, serving: bool = True) -> None:
    """Saves a plain (strategy-free) copy of `trained` as model.keras and, with `serving`, the serving SavedModel."""
    plain = task.build_model()
    plain.set_weights(trained.get_weights())
    model.path.mkdir(parents=True, exist_ok=True)
    plain.save(model.keras_file)
    if hasattr(task, "save_model_inputs"):  # A user's model that takes some of the features: said in its assets.
        model.assets_uri.mkdir(parents=True, exist_ok=True)
        task.save_model_inputs(model.assets_uri)
    if serving:
        plain.export(str(model.serving_uri), format="tf_saved_model", verbose=False)


# What makes a process one of a cluster's: an exporting process must not join that cluster.
CLUSTER_VARIABLES = ("TF_CONFIG", "COORDINATOR_ADDRESS", "COORDINATOR_PORT", "NUM_PROCESSES", "PROCESS_ID")


def export_serving(model: Model) -> None:
    """Exports the serving SavedModel of the model.keras a process of another Keras backend saved.

    Called in a JAX process (process 0 of a JAX cluster on Kubernetes), it exports in a fresh process of the
    TensorFlow backend, as the local launcher does: jax2tf would trace the model on the cluster's devices,
    waiting for the other processes, which have finished."""
    if keras.backend.backend() != "tensorflow":
        environment = {name: value for name, value in os.environ.items() if name not in CLUSTER_VARIABLES}
        code = (
            "import sys; from kflow.components.trainer.loop import export_serving; "
            "from kflow.pipeline.dsl.artifacts import Model; export_serving(Model(sys.argv[1]))"
        )
        command = [sys.executable, "-c", code, str(model.uri)]
        subprocess.run(command, env={**environment, "KERAS_BACKEND": "tensorflow"}, check=True, timeout=3600)
        return
    module = model.assets_uri / MODULE_FILE
    if module.exists():  # The user's module registers its custom layers before the model loads.
        load_module(module.read_text())
    keras.models.load_model(model.keras_file).export(str(model.serving_uri), format="tf_saved_model", verbose=False)
