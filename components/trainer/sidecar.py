"""The sidecar evaluator (`trainer.sidecar_evaluator: true`): a cluster task of type `evaluator`.

As in TensorFlow's parameter-server and multi-worker guides, a separate process evaluates each
checkpoint the chief writes while training goes on: it restores the model from every new
checkpoint under `working_dir/checkpoints`, evaluates it on Split-eval, and writes TensorBoard
summaries (`model_run/logs/sidecar_eval/`) and one line per checkpoint to
`model_run/sidecar_eval.jsonl` (`{"step": …, "loss": …, <metrics>}`). It stops once training has
ended (the chief wrote `history.json`) and the last checkpoint is evaluated, or when the cluster
stops it. The evaluator is not part of the training cluster: TF_CONFIG's `cluster` leaves it out,
as the Training Operator does for a TFJob's Evaluator replica.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import tensorflow as tf

from kflow.components.datasets.task import Task
from kflow.components.trainer.config import TrainConfig
from kflow.components.trainer.training import dataset_factory
from kflow.pipeline.dsl.artifacts import Examples, ModelRun

log = logging.getLogger("kflow.trainer")

RESULTS = "sidecar_eval.jsonl"


def evaluate_checkpoints(
    task: Task,
    *,
    examples: Examples,
    model_run: ModelRun,
    config: TrainConfig,
    working_dir: Path,
    assets_dir: Path | None = None,
    poll_seconds: float = 1.0,
) -> int:
    """Evaluates every new checkpoint until training ends; returns how many it evaluated."""
    if "eval" not in examples.splits:
        raise ValueError("the sidecar evaluator needs an eval split, and the Examples have none")
    if assets_dir is not None:
        task.load_assets(assets_dir)
    model = task.build_model()
    loss = task.loss()
    loss.reduction = "mean_with_sample_weight"
    model.compile(loss=loss, weighted_metrics=task.metrics())
    checkpoint = tf.train.Checkpoint(model=model)
    make_dataset = dataset_factory(task, examples, config)
    results_file = model_run.path / RESULTS
    model_run.path.mkdir(parents=True, exist_ok=True)
    # After a cluster restart, the checkpoints evaluated before it are not evaluated again.
    evaluated = (
        {json.loads(line)["step"] for line in results_file.read_text().splitlines()} if results_file.exists() else set()
    )
    writer = tf.summary.create_file_writer(str(model_run.log_dir / "sidecar_eval"))
    checkpoints = Path(working_dir) / "checkpoints"
    count, training_ended = 0, False
    log.info("sidecar evaluator: watching %s", checkpoints)
    while True:
        state = tf.train.get_checkpoint_state(str(checkpoints)) if checkpoints.exists() else None
        for path in state.all_model_checkpoint_paths if state else []:
            step = int(path.rsplit("-", 1)[1])
            if step in evaluated:
                continue
            try:
                checkpoint.restore(path).expect_partial()
            except (tf.errors.NotFoundError, ValueError):  # Rotated away (the manager keeps the last 2).
                continue
            metrics = model.evaluate(make_dataset("eval", False), verbose=0, return_dict=True)
            values = {name: float(value) for name, value in metrics.items()}
            with results_file.open("a") as results:
                results.write(json.dumps({"step": step, **values}) + "\n")
            with writer.as_default(step=step):
                for name, value in values.items():
                    tf.summary.scalar(name, value)
            writer.flush()
            evaluated.add(step)
            count += 1
            log.info("sidecar evaluator: step %d %s", step, " ".join(f"{k}={v:.4f}" for k, v in values.items()))
        if training_ended:
            return count
        # One more look after training ended: the last checkpoint is written before history.json.
        training_ended = (model_run.path / "history.json").exists()
        if not training_ended:
            time.sleep(poll_seconds)
