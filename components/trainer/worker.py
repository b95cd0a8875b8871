"""One process of a training cluster: `python -m kflow.components.trainer.worker SPEC.json`.

The role comes from `TF_CONFIG`: under `parameter_server`, `worker` and `ps` tasks run a
`tf.distribute.Server` until they are stopped and the `chief` coordinates; under
`multi_worker_mirrored` every worker runs the training loop. Under a JAX strategy the
launcher set `KERAS_BACKEND=jax` and the JAXJob variables (strategies/jax_process.py), and
every process trains, process 0 writing. The spec (written by the
launcher, or by a Kubernetes job) names the artifacts and the training configuration.
"""

from __future__ import annotations

import faulthandler
import json
import logging
import signal
import sys
from pathlib import Path

from kflow.components.datasets.task import load_task
from kflow.components.trainer.config import TrainConfig
from kflow.components.trainer.heap import keep_freed_heap
from kflow.components.trainer.replica import serve_role, train_replica
from kflow.components.trainer.sidecar import evaluate_checkpoints
from kflow.components.trainer.strategies import get_strategy
from kflow.components.trainer.strategies.runtime import is_chief_process, tf_config
from kflow.pipeline.dsl.artifacts import Examples, Model, ModelRun


def main(argv: list[str]) -> int:
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    kflow = logging.getLogger("kflow")
    kflow.addHandler(handler)
    kflow.propagate = False
    keep_freed_heap()
    spec = json.loads(Path(argv[0]).read_text())
    config = TrainConfig(**spec["config"])
    cluster = tf_config()
    # The chief (worker 0 without one) speaks for the cluster; the others only warn, so each line shows once.
    kflow.setLevel(logging.INFO if is_chief_process() else logging.WARNING)
    strategy = get_strategy(config.strategy)
    if serve_role(strategy, cluster, spec["dataset"]):
        return 0
    strategy.runtime_class().configure(spec.get("devices"))  # Before anything touches the devices.
    task = load_task(
        spec["dataset"],
        spec["schema_file"],
        spec.get("model_name"),
        spec.get("model_options"),
        spec.get("module_source"),
        spec.get("module_origin"),
    )
    if (cluster.get("task") or {}).get("type") == "evaluator":
        kflow.setLevel(logging.INFO)
        evaluate_checkpoints(
            task,
            examples=Examples(spec["examples"]),
            model_run=ModelRun(spec["model_run"]),
            config=config,
            working_dir=Path(spec["working_dir"]),
            assets_dir=Path(spec["assets_dir"]) if spec.get("assets_dir") else None,
        )
        return 0
    # The launcher watches the beats (and asks for the Python stacks with SIGUSR1 when they stop).
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    train_replica(
        strategy,
        task,
        working_dir=Path(spec["working_dir"]) if spec.get("working_dir") else None,
        watch=False,
        end_process=True,
        examples=Examples(spec["examples"]),
        model=Model(spec["model"]),
        model_run=ModelRun(spec["model_run"]),
        config=config,
        assets_dir=Path(spec["assets_dir"]) if spec.get("assets_dir") else None,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
