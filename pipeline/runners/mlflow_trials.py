"""A tuner's trials as MLflow runs nested under the kflow run's (`tracking.mlflow`), read from its HyperParameters.

Each trial is a child run (MLflow's `mlflow.parentRunId` tag) named `<node>-trial-<n>`: its settings as params,
its objective and its per-epoch curve (the epoch as step) as metrics, its end as the run's status (completed:
FINISHED, pruned: KILLED, failed: FAILED) and as the tag `kflow.trial.state`. The search's best.json, trials.csv
and objective.png go under `<node>/` in the parent run's artifacts.
"""

from __future__ import annotations

import json
import math
import time
from typing import Any

from kflow.pipeline.dsl.artifacts import HyperParameters
from kflow.pipeline.runners.run_record import Run

_STATUS = {"completed": "FINISHED", "pruned": "KILLED", "failed": "FAILED"}
_NOT_METRICS = ("epoch", "step", "seconds", "examples_per_second")


def log_trials(client: Any, experiment_id: str, parent_run_id: str, run: Run) -> int:
    """Logs every trial of the run's finished tuner nodes as a nested run; returns how many."""
    from mlflow.entities import Metric, Param

    logged = 0
    now = int(time.time() * 1000)
    for node_id, execution in run.executions.items():
        if not execution.finished:
            continue
        for output in execution.outputs_of_type(HyperParameters):
            if not (output.path / "trials.json").is_file():
                continue
            for name in ("best.json", "trials.csv", "objective.png"):
                if (output.path / name).is_file():
                    client.log_artifact(parent_run_id, str(output.path / name), artifact_path=node_id)
            for trial in output.trials:
                state = trial["state"]
                child = client.create_run(
                    experiment_id,
                    run_name=f"{node_id}-trial-{trial['number']}",
                    tags={"mlflow.parentRunId": parent_run_id, "kflow.trial.state": state, "kflow.node": node_id},
                ).info.run_id
                params = [Param(key, json.dumps(value)[:6000]) for key, value in sorted(trial["settings"].items())]
                metrics = [
                    Metric(name, float(value), now, int(epoch["epoch"]))
                    for epoch in trial.get("curve") or []
                    for name, value in epoch.items()
                    if name not in _NOT_METRICS and isinstance(value, (int, float)) and math.isfinite(value)
                ]
                if trial.get("value") is not None:
                    metrics.append(Metric("objective", float(trial["value"]), now, 0))
                for start in range(0, len(params), 100):
                    client.log_batch(child, params=params[start : start + 100])
                for start in range(0, len(metrics), 1000):
                    client.log_batch(child, metrics=metrics[start : start + 1000])
                client.set_terminated(child, _STATUS.get(state, "FAILED"))
                logged += 1
    return logged
