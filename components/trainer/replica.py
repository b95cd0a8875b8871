"""One process of a training cluster, whoever started it: a local launcher (`worker.py`) or a pod (the executor).

A serving role serves (`serve_role`); a training one beats into the working dir's heartbeats while it trains
(watched by the launcher beside it, or, in a pod, by itself: `watch`), then leaves the cluster as its strategy says
(`Runtime.leave`: under multi_worker_mirrored the chief ends after the other workers, so none of them beats to a
coordination service that is gone).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kflow.components.datasets import get_dataset
from kflow.components.trainer.strategies import StrategySpec
from kflow.components.trainer.strategies.runtime import is_chief_process, replica_name
from kflow.pipeline.dsl import heartbeat


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
