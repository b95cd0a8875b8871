"""Trainer executor: fits a registered Keras model on the train split with `model.fit`.

Single-process slice: the "default" strategy (one device) and "mirrored" (all local
devices). The decoded splits are cached in memory before `fit` starts, so epochs
read neither files nor protos and the input pipeline keeps up with the model.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import keras
import tensorflow as tf

from kflow.components.datasets.task import load_task
from kflow.components.models import MODELS, build_model
from kflow.components.trainer.config import TrainConfig
from kflow.components.trainer.launcher import launch
from kflow.components.trainer.loop import train
from kflow.components.trainer.optimizers import make_optimizer
from kflow.components.trainer.strategies import get_strategy
from kflow.components.trainer.strategies.runtime import is_chief, tf_config
from kflow.components.util.examples_dataset import image_shape, make_dataset
from kflow.components.util.schema import feature_spec, int_domain, load_schema
from kflow.pipeline.dsl.artifacts import Examples, Model, ModelRun, Schema

log = logging.getLogger("kflow.trainer")

IMAGE_FEATURE = "image"
LABEL_FEATURE = "label"

OPTIMIZERS: dict[str, type[keras.optimizers.Optimizer]] = {
    "adam": keras.optimizers.Adam,
    "adamw": keras.optimizers.AdamW,
    "sgd": keras.optimizers.SGD,
}


def run(
    *,
    examples: Examples,
    schema: Schema,
    model: Model,
    model_run: ModelRun,
    model_name: str = "mnist_convnet",
    strategy: str = "default",
    epochs: int = 3,
    batch_size: int = 128,
    optimizer: str = "adam",
    learning_rate: float = 0.001,
    steps_per_epoch: int | None = None,
    seed: int = 42,
    shuffle_buffer: int = 10000,
    early_stopping_patience: int | None = None,
    task: str = "mnist",
    model_options: dict | None = None,
    workers: int = 2,
    parameter_servers: int = 1,
    max_restarts: int = 0,
    weight_decay: float = 0.0,
    schedule: str = "constant",
    warmup_steps: int = 0,
    mixed_precision: bool = False,
    checkpoint_every_steps: int | None = None,
    log_every_steps: int = 100,
    working_dir: Path | None = None,
) -> dict[str, Any]:
    """Trains the task's model on Split-train (validating on Split-eval when present) and exports it.

    `batch_size` is the global batch size: with "mirrored" it is divided among the replicas.
    Writes `model.keras` and the serving SavedModel into `model`, TensorBoard logs and
    `history.json` into `model_run`, and returns the last epoch's metrics.

    MNIST under "default"/"mirrored" trains with `model.fit` on a cached dataset (the fastest
    path); every other case runs the custom loop of `kflow.components.trainer.loop`, in this process
    or, for "multi_worker_mirrored"/"parameter_server" without a TF_CONFIG, on a local cluster
    of `workers` (+ `parameter_servers`) processes started here. `working_dir` keeps the
    checkpoints a re-run resumes from.
    """
    strategy_spec = get_strategy(strategy)
    config = TrainConfig(
        strategy=strategy, epochs=epochs, batch_size=batch_size, steps_per_epoch=steps_per_epoch,
        optimizer=optimizer, learning_rate=learning_rate, weight_decay=weight_decay, schedule=schedule,
        warmup_steps=warmup_steps, mixed_precision=mixed_precision,
        early_stopping_patience=early_stopping_patience, shuffle_buffer=shuffle_buffer, seed=seed,
        checkpoint_every_steps=checkpoint_every_steps, log_every_steps=log_every_steps,
    )  # fmt: skip
    config.validate()
    if not strategy_spec.fit or task != "mnist" or model_name != "mnist_convnet" or model_options or mixed_precision:
        return _run_loop(
            task=task, model_name=model_name, model_options=model_options or {}, examples=examples, schema=schema,
            model=model, model_run=model_run, config=config, workers=workers, parameter_servers=parameter_servers,
            max_restarts=max_restarts, working_dir=working_dir,
        )  # fmt: skip
    distribution = strategy_spec.runtime_class()().strategy
    if model_name not in MODELS:
        raise ValueError(f"unknown model {model_name!r}; registered models: {', '.join(sorted(MODELS))}")
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"unknown optimizer {optimizer!r}; choose one of {', '.join(OPTIMIZERS)}")
    for name, value in (("epochs", epochs), ("batch_size", batch_size), ("steps_per_epoch", steps_per_epoch)):
        if value is not None and value < 1:
            raise ValueError(f"{name} must be at least 1, got {value}")
    has_eval = "eval" in examples.splits

    keras.utils.set_random_seed(seed)
    parsed_schema = load_schema(schema.file)
    spec = feature_spec(parsed_schema)
    shape = image_shape(parsed_schema, IMAGE_FEATURE)
    low, high = int_domain(parsed_schema, LABEL_FEATURE)
    if low != 0:
        raise ValueError(f"labels must be class indices starting at 0; the schema's label domain is {low}..{high}")

    def dataset(split: str, shuffle: int):
        files = examples.split_files(split)
        return make_dataset(
            files, spec, batch_size=batch_size, image_feature=IMAGE_FEATURE, label_feature=LABEL_FEATURE,
            image_shape=shape, shuffle_buffer=shuffle, seed=seed, cache=True,
        )  # fmt: skip

    started = time.perf_counter()
    train_data = dataset("train", shuffle_buffer)
    train_count = _fill_cache(train_data)
    eval_data = dataset("eval", 0) if has_eval else None
    eval_count = _fill_cache(eval_data) if eval_data is not None else 0
    load_seconds = time.perf_counter() - started
    if train_count == 0:
        raise ValueError(f"the train split under {examples.split_uri('train')} holds no examples")
    if eval_data is not None and eval_count == 0:
        log.warning("train: the eval split holds no examples; training without validation")
        eval_data = None
    log.info("train: %d train and %d eval examples read and cached in %.1f s", train_count, eval_count, load_seconds)
    # unbatch() hides the length of a pass; restore it so Keras knows where an epoch ends.
    train_data = train_data.apply(tf.data.experimental.assert_cardinality(-(-train_count // batch_size)))
    if eval_data is not None:
        eval_data = eval_data.apply(tf.data.experimental.assert_cardinality(-(-eval_count // batch_size)))
    if steps_per_epoch is not None:
        train_data = train_data.repeat()
    examples_per_epoch = steps_per_epoch * batch_size if steps_per_epoch is not None else train_count
    if early_stopping_patience is not None and eval_data is None:
        raise ValueError("early_stopping_patience needs eval examples to watch val_loss, and the Examples have none")

    with distribution.scope():
        keras_model = build_model(model_name, num_classes=high + 1)
        keras_model.compile(
            optimizer=make_optimizer(config, total_steps=epochs * -(-examples_per_epoch // batch_size)),
            loss="sparse_categorical_crossentropy",
            metrics=["accuracy"],
        )

    epoch_log = EpochLog(epochs, examples_per_epoch)
    callbacks: list[keras.callbacks.Callback] = [
        epoch_log,
        keras.callbacks.TensorBoard(log_dir=str(model_run.log_dir)),
    ]
    if early_stopping_patience is not None:
        callbacks.append(
            keras.callbacks.EarlyStopping(
                monitor="val_loss", patience=early_stopping_patience, restore_best_weights=True
            )
        )

    log.info(
        "train: fitting %s for %d epochs, batch %d, %s(lr=%g), strategy %s on %d replica(s)",
        model_name, epochs, batch_size, optimizer, learning_rate, strategy, distribution.num_replicas_in_sync,
    )  # fmt: skip
    fit_started = time.perf_counter()
    keras_model.fit(
        train_data,
        validation_data=eval_data,
        epochs=epochs,
        steps_per_epoch=steps_per_epoch,
        callbacks=callbacks,
        shuffle=False,  # The dataset shuffles itself.
        verbose=0,
    )
    train_seconds = time.perf_counter() - fit_started
    epochs_run = len(epoch_log.epochs)
    examples_trained = examples_per_epoch * epochs_run
    examples_per_second = examples_trained / train_seconds

    model.path.mkdir(parents=True, exist_ok=True)
    keras_model.save(model.keras_file)
    keras_model.export(str(model.serving_uri), format="tf_saved_model", verbose=False)
    model.write_task_spec(task, model_name, {})
    last = epoch_log.epochs[-1]
    model_run.write_json(
        "history.json",
        {
            "epochs": epochs_run,
            "per_epoch": epoch_log.epochs,
            "train_examples": train_count,
            "eval_examples": eval_count,
            "examples_trained": examples_trained,
            "load_seconds": round(load_seconds, 3),
            "train_seconds": round(train_seconds, 3),
            "examples_per_second": round(examples_per_second, 1),
            "batch_size": batch_size,
            "strategy": strategy,
            "replicas": distribution.num_replicas_in_sync,
        },
    )
    log.info("train: %d epochs in %.1f s (%.0f ex/s)", epochs_run, train_seconds, examples_per_second)
    return {
        "epochs": epochs_run,
        "loss": last["loss"],
        "accuracy": last["accuracy"],
        "val_accuracy": last.get("val_accuracy"),
        "examples_per_second": round(examples_per_second, 1),
    }


class EpochLog(keras.callbacks.Callback):
    """Logs one INFO line per epoch (Keras' progress bar is unreadable in log files) and keeps the metrics."""

    def __init__(self, epochs: int, examples_per_epoch: int):
        super().__init__()
        self.total_epochs = epochs
        self.examples_per_epoch = examples_per_epoch
        self.epochs: list[dict[str, float]] = []
        self._started = 0.0
        self._validation_started = 0.0
        self._validation_seconds = 0.0

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        self._started = time.perf_counter()
        self._validation_seconds = 0.0

    def on_test_begin(self, logs: dict | None = None) -> None:
        self._validation_started = time.perf_counter()

    def on_test_end(self, logs: dict | None = None) -> None:
        self._validation_seconds += time.perf_counter() - self._validation_started

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        seconds = time.perf_counter() - self._started
        metrics = {name: float(value) for name, value in (logs or {}).items()}
        speed = self.examples_per_epoch / seconds
        self.epochs.append(
            {
                "epoch": epoch + 1,
                **metrics,
                "seconds": round(seconds, 3),
                "validation_seconds": round(self._validation_seconds, 3),
                "examples_per_second": round(speed, 1),
            }
        )
        shown = " ".join(f"{name}={metrics[name]:.4f}" for name in sorted(metrics, key=_display_order))
        log.info("train: epoch %d/%d %s (%.1f s, %.0f ex/s)", epoch + 1, self.total_epochs, shown, seconds, speed)


def _run_loop(
    *, task: str, model_name: str, model_options: dict, examples: Examples, schema: Schema, model: Model,
    model_run: ModelRun, config: TrainConfig, workers: int, parameter_servers: int, max_restarts: int,
    working_dir: Path | None,
) -> dict[str, Any]:  # fmt: skip
    config.validate()
    if max_restarts < 0:
        raise ValueError(f"max_restarts must not be negative, got {max_restarts}")
    strategy = get_strategy(config.strategy)
    replicas = strategy.replicas(workers, parameter_servers)  # Refuses counts the strategy cannot use.
    # The builder's default model is MNIST's; other tasks then use their own default model.
    chosen = None if task != "mnist" and model_name == "mnist_convnet" else model_name
    task_object = load_task(task, schema.file, chosen, model_options)
    temporary = None
    if working_dir is None:
        temporary = tempfile.mkdtemp(prefix="kflow-trainer-")
        working_dir = Path(temporary)
    try:
        # Inside a cluster (TF_CONFIG, e.g. Kubeflow pods) every task runs this executor: serving roles
        # (a PS cluster's workers and parameter servers) only serve; non-chief workers prepare assets privately.
        cluster = tf_config()
        role = cluster.get("task") or {}
        if strategy.serves(role.get("type")):
            strategy.runtime_class().serve(cluster, type(task_object).op_libraries)
            return {}
        if is_chief(cluster):
            assets_dir = model.assets_uri
            model.write_task_spec(task, task_object.model_name, model_options)
        else:
            assets_dir = Path(working_dir) / f"assets-{role.get('type')}-{role.get('index')}"
        task_object.prepare(examples, assets_dir)
        spec = {
            "task": task, "schema_file": str(schema.file), "model_name": task_object.model_name,
            "model_options": model_options, "examples": examples.uri, "model": model.uri, "model_run": model_run.uri,
            "working_dir": str(working_dir), "assets_dir": str(assets_dir), "config": config.to_json(),
        }  # fmt: skip
        if strategy.multi_process and not os.environ.get("TF_CONFIG"):
            shown = ", ".join(f"{count} {role}" for role, count in replicas.items())
            log.info("train: starting a local %s cluster: %s", config.strategy, shown)
            restarts = launch(
                spec, spec_dir=Path(working_dir) / "launch", workers=workers, parameter_servers=parameter_servers,
                max_restarts=max_restarts,
            )  # fmt: skip
            history = model_run.history
            history["restarts"] = restarts
            model_run.write_json("history.json", history)
        else:
            history = train(
                task_object, examples=examples, model=model, model_run=model_run, config=config,
                working_dir=Path(working_dir), assets_dir=assets_dir,
            )  # fmt: skip
    finally:
        if temporary is not None:
            shutil.rmtree(temporary, ignore_errors=True)
    last = history["per_epoch"][-1] if history["per_epoch"] else {}
    return {
        "epochs": history["epochs"],
        # The last epoch's metrics: the task's own (accuracy, masked_accuracy, auc...) and their val_ twins.
        **{name: value for name, value in last.items() if name not in _EPOCH_BOOKKEEPING},
        "examples_per_second": history["examples_per_second"],
        "final_step": history["final_step"],
        "start_step": history["start_step"],
    }


_EPOCH_BOOKKEEPING = ("epoch", "step", "seconds", "examples_per_second")


def _fill_cache(dataset: tf.data.Dataset) -> int:
    """Runs one pass over a cached dataset, which fills its in-memory cache, and returns its example count."""
    return int(dataset.reduce(tf.constant(0, tf.int64), lambda count, batch: count + tf.shape(batch[1], tf.int64)[0]))


def _display_order(metric: str) -> tuple[bool, bool, str]:
    """Training metrics before validation ones, the loss first in each."""
    base = metric.removeprefix("val_")
    return metric.startswith("val_"), base != "loss", base
