"""What every training path shares (the custom loop, `fit`, the explicit JAX loop, the sidecar evaluator): the
task's datasets and split sizes, the precision policy, `history.json`, each process's final state, and the
exported model."""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import math
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import keras
import numpy as np
import tensorflow as tf
from google.protobuf import text_format

from kflow.components.datasets.module_imports import saved_imports
from kflow.components.datasets.task import Task, task_for_model
from kflow.components.datasets.user_module import MODULE_FILE, load_module
from kflow.components.models import load_trained
from kflow.components.trainer.config import TrainConfig
from kflow.components.trainer.serving_export import examples_parser, write_classes, write_serving
from kflow.components.trainer.steps_per_call import whole_calls
from kflow.components.trainer.strategies import get_strategy
from kflow.components.trainer.strategies.runtime import MakeDataset, Runtime
from kflow.components.util.input_autotune import untuned
from kflow.components.util.metric_direction import lower_is_better
from kflow.pipeline.dsl.artifacts import Examples, Model, ModelRun

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
        ).apply(untuned)

    return make_dataset


def read_splits(task: Task, examples: Examples, config: TrainConfig) -> tuple[MakeDataset, int, int, int]:
    """(the task's datasets, the train and eval examples, the steps of an epoch): what every loop trains from."""
    make_dataset = dataset_factory(task, examples, config)
    return (make_dataset, *split_sizes(make_dataset, examples, config))


def split_sizes(make_dataset: MakeDataset, examples: Examples, config: TrainConfig) -> tuple[int, int, int]:
    """(train examples, eval examples, steps per epoch), read once per process so every worker runs as many steps:
    the ingest's counts, else counted by reading each split (seconds for MNIST)."""
    # A task's dataset yields one example per record (Task.dataset): the ingest's counts are its sizes.
    recorded = examples.recorded_counts

    def split_size(split: str) -> int:
        if split in recorded:
            return recorded[split]
        return count_examples(make_dataset(split, False, config.batch_size))

    train_count = split_size("train")
    if train_count == 0:
        raise ValueError(f"the train split under {examples.split_uri('train')} holds no examples")
    if train_count < config.batch_size and next(iter(make_dataset("train", True, config.batch_size)), None) is None:
        raise ValueError(
            f"the train split holds {train_count} examples, fewer than one batch of trainer.batch_size "
            f"{config.batch_size}, and this task trains on whole batches: lower trainer.batch_size or give it more data"
        )
    eval_count = split_size("eval") if "eval" in examples.splits else 0
    if config.early_stopping_patience is not None and not eval_count:
        raise ValueError(
            "early_stopping_patience needs eval examples to watch the validation metric, and there are none"
        )
    if config.steps_per_epoch is not None:
        return train_count, eval_count, config.steps_per_epoch
    # One pass, in whole calls of a set steps_per_execution: the batches repeat, so a last call goes on from the start.
    return train_count, eval_count, whole_calls(math.ceil(train_count / config.batch_size), config.steps_per_call)


def watched_metric(task: Task, config: TrainConfig) -> tuple[str, str]:
    """(the validation metric early stopping watches, "min" or "max"): the task's own unless the config names one,
    which must be among the task's (a loss or an error falls, any other metric rises: metric_direction.py)."""
    monitor = config.early_stopping_monitor
    if monitor is None:
        return task.monitor, task.monitor_mode
    known = ["val_loss", *(f"val_{metric.name}" for metric in task.metrics())]
    if monitor not in known:
        raise ValueError(
            f"early_stopping_monitor: {monitor!r} is not a validation metric of the {task.name} task "
            f"(choose one of {', '.join(known)})"
        )
    return monitor, "min" if lower_is_better(monitor) else "max"


def weights_digest(model: keras.Model) -> str:
    digest = hashlib.sha256()
    for weight in model.get_weights():
        digest.update(np.ascontiguousarray(weight).tobytes())
    return digest.hexdigest()


def log_epochs_trained(summary: dict[str, Any]) -> None:
    """The training's last log line: the epochs (a resumed one's, from the epoch after its checkpoint), time, speed."""
    epochs, this_run = summary["epochs"], summary["epochs_this_run"]
    said = f"{epochs} epochs" if epochs == this_run else f"epochs {epochs - this_run + 1}-{epochs} (resumed)"
    if not this_run:  # resumed at its last checkpoint, after the last epoch
        said = f"no epoch left to train (resumed after epoch {epochs})"
    log.info("train: %s in %.1f s (%.0f ex/s)", said, summary["train_seconds"], summary["examples_per_second"])


def training_summary(
    task: Task,
    config: TrainConfig,
    runtime: Runtime,
    *,
    per_epoch: list[dict[str, float]],
    steps: tuple[int, int],
    counts: tuple[int, int, int],
    examples_trained: int,
    seconds: float,
    stopped_early: bool = False,
    processes: int | None = None,
    earlier: list[dict[str, float]] = (),
    warm_started_from: str | None = None,
) -> dict[str, Any]:
    """The run's `history.json`, the same keys under every training path.

    `steps`: (start step, final step); `counts`: (train examples, eval examples, steps per epoch); `processes`: the
    training processes (None: the runtime's); `earlier`: the epochs before a resumed run's (epoch_journal.py);
    `warm_started_from`: the earlier model it started from (warm_start.py), None from scratch."""
    processes = runtime.process_count if processes is None else processes
    train_count, eval_count, steps_per_epoch = counts
    return {
        # The epoch reached, counted from the start of training: a resumed run trains only those after its checkpoint.
        "epochs": int(per_epoch[-1]["epoch"]) if per_epoch else steps[1] // max(counts[2], 1),
        "epochs_this_run": len(per_epoch),
        "per_epoch": [*earlier, *per_epoch],
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
        "dataset": task.name,
        "model_name": task.model_name,
        "warm_started_from": warm_started_from,
    }


def write_process_state(model_run: ModelRun, me: str, step: int, model: keras.Model) -> None:
    """`workers/<me>.json`: the step and weights digest this process of a cluster ended with."""
    final = {"me": me, "step": step, "weights_sha256": weights_digest(model)}
    (model_run.path / "workers").mkdir(parents=True, exist_ok=True)
    (model_run.path / "workers" / f"{me}.json").write_text(json.dumps(final) + "\n")


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


TrainBody = Callable[[Task, Runtime, Examples, Model, ModelRun, TrainConfig, Path | None], dict[str, Any]]


def strategy_trainer(body: TrainBody) -> Callable[..., dict[str, Any]]:
    """A trainer module's `train(task, *, examples, model, model_run, config, working_dir=None, assets_dir=None)`
    (what replica.py calls for fit, loop and jax_loop) from its body, which gets the strategy's runtime: made here, in
    the config's precision policy, with Keras seeded (precision_policy), the task's assets loaded, the same for every
    loop."""

    @functools.wraps(body)
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
        with precision_policy(config):
            runtime = get_strategy(config.strategy).runtime_class()(config, task.model_name)
            if assets_dir is not None:
                task.load_assets(assets_dir)
            return body(task, runtime, examples, model, model_run, config, working_dir)

    return train


def describe_training(task: Task, config: TrainConfig, steps_per_epoch: int) -> str:
    """What a loop says as it starts: the model, its epochs and steps, the global batch and the optimizer."""
    return (
        f"{task.model_name} for {config.epochs} epochs of {steps_per_epoch} steps, global batch {config.batch_size}, "
        f"{config.optimizer}(lr={config.learning_rate:g}, {config.schedule})"
    )


def export_model(task: Task, trained: keras.Model, model: Model, *, serving: bool = True) -> None:
    """Saves a plain (strategy-free) copy of `trained` as model.keras and, with `serving`, the serving SavedModel."""
    weights = trained.get_weights()
    _refuse_non_finite(trained, weights)
    plain = task.build_model()
    plain.set_weights(weights)
    model.path.mkdir(parents=True, exist_ok=True)
    plain.save(model.keras_file)
    if hasattr(task, "save_model_inputs"):  # A user's model that takes some of the features: said in its assets.
        model.assets_uri.mkdir(parents=True, exist_ok=True)
        task.save_model_inputs(model.assets_uri)
    classes = task.serving_classes()
    write_classes(model.assets_uri, classes)
    # The schema it reads data by goes with the model: new data is scored by it (kflow predict), in any process.
    model.assets_uri.mkdir(parents=True, exist_ok=True)
    model.training_schema_file.write_text(text_format.MessageToString(task.schema))
    if serving:
        write_serving(plain, model.serving_uri, classes, model.assets_uri, examples_parser(task))


def _refuse_non_finite(trained: keras.Model, weights: list[np.ndarray]) -> None:
    """No model with a NaN or infinite weight is exported: it scores every row alike or not at all, and its loss
    need not say so (a NaN input row through ReLU reads as 0: a user trial's flat loss, blessed, then served)."""
    for variable, value in zip(trained.weights, weights, strict=True):
        if value.dtype.kind == "f" and not np.isfinite(value).all():
            bad = int(value.size - np.isfinite(value).sum())
            raise ValueError(
                f"the trained model's weight {variable.path} holds {bad} NaN or infinite value(s) of {value.size}: "
                "a NaN in its inputs (a missing number a transform.module left as NaN?) or a diverging loss (the "
                "learning rate?); no model exported"
            )


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
            "import sys; from kflow.components.trainer.training import export_serving; "
            "from kflow.pipeline.dsl.artifacts import Model; export_serving(Model(sys.argv[1]))"
        )
        command = [sys.executable, "-c", code, str(model.uri)]
        subprocess.run(command, env={**environment, "KERAS_BACKEND": "tensorflow"}, check=True, timeout=3600)
        return
    module = model.assets_uri / MODULE_FILE
    if module.exists():  # The user's module registers its custom layers before the model loads.
        load_module(module.read_text(), imports=saved_imports(module))
    trained = load_trained(model.keras_file, model.task_spec.get("model_name"))
    parse = examples_parser(task_for_model(model, model.training_schema_file))
    write_serving(trained, model.serving_uri, model.class_names, model.assets_uri, parse)
