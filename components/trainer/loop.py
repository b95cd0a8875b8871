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

import functools
import importlib
import logging
import math
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np
import tensorflow as tf

from kflow.components.datasets.task import Task
from kflow.components.trainer.checkpoints import restore_newest_readable
from kflow.components.trainer.config import TrainConfig
from kflow.components.trainer.early_stop import BestEpoch
from kflow.components.trainer.epoch_journal import EpochJournal
from kflow.components.trainer.optimizers import make_optimizer
from kflow.components.trainer.save_pacing import SavePacing
from kflow.components.trainer.steps_per_call import StepsPerCall
from kflow.components.trainer.strategies.cluster_env import is_chief, tf_config
from kflow.components.trainer.strategies.runtime import LoopParts, Runtime
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
from kflow.components.util import epoch_report
from kflow.components.util.progress import EpochProgress
from kflow.pipeline.dsl.artifacts import Examples, Model, ModelRun
from kflow.pipeline.dsl.scratch import scratch_dir

log = logging.getLogger("kflow.trainer")


@strategy_trainer
def train(
    task: Task,
    runtime: Runtime,
    examples: Examples,
    model: Model,
    model_run: ModelRun,
    config: TrainConfig,
    working_dir: Path | None,
) -> dict[str, Any]:
    """Trains `task`'s model under `config.strategy` and, on the chief, exports it; returns the summary."""
    cluster = tf_config()
    chief = is_chief(cluster)
    task_info = cluster.get("task") or {"type": "chief", "index": 0}
    me = f"{task_info['type']}-{task_info['index']}"
    global_batch = config.batch_size
    runtime.check_batch(global_batch)
    make_dataset, train_count, eval_count, steps_per_epoch = read_splits(task, examples, config)
    best = BestEpoch(*watched_metric(task, config), config.patience_epochs(steps_per_epoch) or 0)
    eval_steps = math.ceil(eval_count / global_batch)
    total_steps = steps_per_epoch * config.epochs

    with runtime.scope():
        keras_model = task.build_model()
        started_from = warm_start(keras_model, config, task)  # trainer.warm_start: an earlier model's weights
        optimizer = make_optimizer(config, total_steps)
        optimizer.build(keras_model.trainable_variables)
        checkpoint = tf.train.Checkpoint(model=keras_model, optimizer=optimizer)
    rows = {"train": train_count, "eval": eval_count}
    runtime.build(LoopParts(task, keras_model, optimizer, global_batch, make_dataset, eval_steps, rows))

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
    journal = EpochJournal(working_dir, start_step, writes=chief)

    def save(step: int) -> None:
        if runtime.saves_checkpoints(chief):
            manager.save(checkpoint_number=step)

    writers = {}
    if chief:
        writers = {
            "train": tf.summary.create_file_writer(str(model_run.log_dir / "train")),
            "validation": tf.summary.create_file_writer(str(model_run.log_dir / "validation")),
        }
        # tf.summary.scalar imports TensorBoard's summary modules at its first call, 0.06-0.25 s on this project's
        # 2-core VM: imported here, with the writers, rather than inside the first timed epoch.
        importlib.import_module("tensorboard.summary.v2")

    log.info("train: %s %s on %d replica(s)", me, describe_training(task, config, steps_per_epoch), runtime.replicas)
    history: list[dict[str, float]] = []
    calls = StepsPerCall(config.steps_per_execution, runtime, config.checkpoint_every_steps)
    pacing = SavePacing(paced=runtime.process_count == 1)
    step = start_step
    started = time.perf_counter()
    trained_steps = 0
    stopped_early = False

    def copy_weights() -> list[np.ndarray]:  # a CPU variable's numpy() may share its buffer, which next steps overwrite
        return [np.array(weight, copy=True) for weight in keras_model.get_weights()]

    try:
        for epoch in range(start_step // steps_per_epoch, config.epochs):
            epoch_started = time.perf_counter()
            epoch_steps = 0
            runtime.reset_train()
            progress = EpochProgress(epoch + 1, config.epochs, steps_per_epoch, global_batch, config.log_every_steps)
            while step < (epoch + 1) * steps_per_epoch:
                steps = calls.next(step, (epoch + 1) * steps_per_epoch)
                runtime.train_step(steps)
                calls.called()
                step += steps
                epoch_steps += steps
                every = config.checkpoint_every_steps
                if every and step // every > (step - steps) // every:
                    runtime.wait()
                    save(step)
                progress.update(step - epoch * steps_per_epoch, lambda: runtime.train_results()["loss"])
            runtime.wait()
            calls.epoch_ended()
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
            journal.add(history[-1])
            if pacing.due(last=epoch + 1 == config.epochs):
                pacing.timed(functools.partial(save, step))
            shown = " ".join(f"{name}={value:.4f}" for name, value in values.items())
            log.info("train: epoch %d/%d %s (%.1f s, %.0f ex/s)", epoch + 1, config.epochs, shown, seconds, speed)
            epoch_report.report(epoch + 1, values)  # a tuner's trial hears it (and may end the training: pruned)
            for kind, writer in writers.items():
                with writer.as_default(step=epoch + 1):
                    for name, value in values.items():
                        if name.startswith("val_") == (kind == "validation"):
                            tf.summary.scalar(name.removeprefix("val_"), value)
            if config.early_stopping_patience is not None and best.stops(epoch + 1, values, copy_weights):
                stopped_early = True
                break
        if (kept := best.kept_weights(history[-1]["epoch"] if history else 0)) is not None:
            keras_model.set_weights(kept)
            save(step)  # a restart from here resumes from the weights kept
        total_seconds = time.perf_counter() - started
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
            earlier=journal.earlier,
            warm_started_from=started_from,
        )
        if chief:
            export_model(task, keras_model, model)
            model_run.write_json("history.json", summary)
            for writer in writers.values():
                writer.close()
            log_epochs_trained(summary)
        return summary
    finally:
        for folder in temp_dirs:
            shutil.rmtree(folder, ignore_errors=True)
