"""One training process of a cluster, whoever started it: a local launcher (`worker.py`) or a pod (the executor).

It beats into the working dir's heartbeats while it trains (watched by the launcher beside it, or, in a pod, by
itself: `watch`), then leaves the cluster as its strategy says (`Runtime.leave`: under multi_worker_mirrored the
chief ends after the other workers, so none of them beats to a coordination service that is gone).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kflow.components.trainer.strategies import StrategySpec
from kflow.components.trainer.strategies.runtime import is_chief_process, replica_name
from kflow.pipeline.dsl import heartbeat


def train_replica(
    strategy: StrategySpec, task: Any, *, working_dir: Path | None, watch: bool, **artifacts_and_config: Any
) -> dict[str, Any]:
    """Trains this process's part with the strategy's trainer; returns its history."""
    config = artifacts_and_config["config"]
    if working_dir is not None and strategy.multi_process:
        heartbeat.start(working_dir / heartbeat.HEARTBEATS, replica_name(), config.stall_timeout, watch=watch)
    try:
        history = strategy.train_module().train(task, working_dir=working_dir, **artifacts_and_config)
    finally:
        heartbeat.stop()
    strategy.runtime_class().leave(is_chief_process())
    return history
