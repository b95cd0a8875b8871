"""One process of a training cluster, whoever started it: a local launcher (`worker.py`) or a pod (the executor).

`run_replica` is the whole of it, the same in a pod and in a launched process: a serving role serves
(`serve_role`); the others load the task and prepare its assets (`prepare_assets`: the chief into the model, the
others privately), then the sidecar evaluator evaluates and a training role trains, beating into the working
dir's heartbeats (watched by the launcher beside it, or, in a pod, by itself: `watch`), and leaves the cluster as
its strategy says (`Runtime.leave`: under multi_worker_mirrored the chief ends after the other workers, so none of
them beats to a coordination service that is gone).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kflow.components.datasets import get_dataset
from kflow.components.datasets.module_imports import save_module
from kflow.components.datasets.user_module import MODULE_FILE
from kflow.components.trainer.config import ModelChoice
from kflow.components.trainer.strategies import StrategySpec
from kflow.components.trainer.strategies.cluster_env import is_chief_process, replica_name, tf_config
from kflow.pipeline.dsl import heartbeat
from kflow.pipeline.dsl.artifacts import Examples, Model


def run_replica(
    strategy: StrategySpec,
    choice: ModelChoice,
    *,
    schema_file: str | Path,
    devices: int | None,
    working_dir: Path,
    watch: bool,
    end_process: bool = False,
    **artifacts_and_config: Any,
) -> dict[str, Any] | None:
    """This process's part of the training: its history, or None for a role that only serves or evaluates."""
    cluster = tf_config()
    if serve_role(strategy, cluster, choice.dataset):
        return None
    strategy.runtime_class().configure(devices)  # before anything touches the devices
    task = choice.load_task(schema_file)
    examples, model = artifacts_and_config["examples"], artifacts_and_config["model"]
    assets_dir = prepare_assets(task, choice, examples, model, working_dir)
    if (cluster.get("task") or {}).get("type") == "evaluator":  # a TFJob's Evaluator replica: the sidecar evaluator
        from kflow.components.trainer.sidecar import evaluate_checkpoints

        evaluate_checkpoints(
            task,
            examples=examples,
            model_run=artifacts_and_config["model_run"],
            config=artifacts_and_config["config"],
            working_dir=working_dir,
        )
        return None
    return train_replica(
        strategy,
        task,
        working_dir=working_dir,
        watch=watch,
        end_process=end_process,
        assets_dir=assets_dir,
        **artifacts_and_config,
    )


def prepare_assets(task: Any, choice: ModelChoice, examples: Examples, model: Model, working_dir: Path) -> Path:
    """Prepares the task's assets (a vocabulary, ...) and returns their folder: the chief's go into the model, with
    the task spec and the user's module (the Evaluator loads the model with the code it was trained with); any other
    process prepares its own copy privately, so that none waits for another's files."""
    if is_chief_process():
        assets_dir = model.assets_uri
        model.write_task_spec(choice.dataset, task.model_name, choice.model_options or {})
        if choice.module_source is not None:
            save_module(assets_dir / MODULE_FILE, choice.module_source, choice.module_imports)
    else:
        assets_dir = Path(working_dir) / f"assets-{replica_name()}"
    task.prepare(examples, assets_dir)
    return assets_dir


def serve_role(strategy: StrategySpec, cluster: dict[str, Any], dataset: str) -> bool:
    """A process whose role only serves (a PS cluster's workers and parameter servers) serves until it is stopped,
    after importing the dataset task's op libraries; True when it did, False for a role that trains."""
    if not strategy.serves((cluster.get("task") or {}).get("type")):
        return False
    strategy.runtime_class().serve(cluster, get_dataset(dataset).task_class().op_libraries)
    return True


def train_replica(
    strategy: StrategySpec,
    task: Any,
    *,
    working_dir: Path | None,
    watch: bool,
    end_process: bool = False,
    **artifacts_and_config: Any,
) -> dict[str, Any]:
    """Trains this process's part with the strategy's trainer; returns its history. `end_process`: the process has
    nothing to do afterwards (a launched worker), so its strategy may end it when it leaves the cluster."""
    config = artifacts_and_config["config"]
    if working_dir is not None and strategy.multi_process:
        heartbeat.start(working_dir / heartbeat.HEARTBEATS, replica_name(), config.stall_timeout, watch=watch)
    try:
        history = strategy.train_module().train(task, working_dir=working_dir, **artifacts_and_config)
    finally:
        heartbeat.stop()
    strategy.runtime_class().leave(is_chief_process(), end_process=end_process)
    return history
