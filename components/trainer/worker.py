"""One process of a training cluster: `python -m kflow.components.trainer.worker SPEC.json`.

The role comes from `TF_CONFIG`: under `parameter_server`, `worker` and `ps` tasks run a
`tf.distribute.Server` until they are stopped and the `chief` coordinates; under
`multi_worker_mirrored` every worker runs the training loop. Under a JAX strategy the
launcher set `KERAS_BACKEND=jax` and the JAXJob variables (strategies/jax_process.py), and
every process trains, process 0 writing. The spec (`worker_spec`), written by the launcher, names the model
choice, the artifacts and the training configuration; the process then does what a pod of a cluster job does
(`replica.run_replica`): the chief prepares the task's assets into the model, the others their own copies.
"""

from __future__ import annotations

import faulthandler
import json
import logging
import os
import signal
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from kflow.components.trainer.config import ModelChoice, TrainConfig
from kflow.components.trainer.heap import keep_freed_heap
from kflow.components.trainer.replica import run_replica
from kflow.components.trainer.strategies import get_strategy
from kflow.components.trainer.strategies.cluster_env import is_chief_process, tf_config
from kflow.components.trainer.warm_workers import WARM_FLAG, wait_for_job
from kflow.pipeline.dsl import lean_imports
from kflow.pipeline.dsl.artifacts import Examples, Model, ModelRun
from kflow.pipeline.dsl.process_exit import exit_now


def worker_spec(
    choice: ModelChoice,
    config: TrainConfig,
    *,
    schema_file: str | Path,
    devices: int | None,
    examples: Examples,
    model: Model,
    model_run: ModelRun,
    working_dir: str | Path,
) -> dict[str, Any]:
    """What a launched process reads (the launcher writes it into a file and passes its path)."""
    return {
        "choice": asdict(choice),
        "config": config.to_json(),
        "schema_file": str(schema_file),
        "devices": devices,
        "examples": examples.uri,
        "model": model.uri,
        "model_run": model_run.uri,
        "working_dir": str(working_dir),
    }


def main(argv: list[str]) -> int:
    handler = logging.StreamHandler(sys.stdout)
    # The time, as the launcher's own lines have it: when each process got where shows in the relayed log.
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s", datefmt="%H:%M:%S"))
    kflow = logging.getLogger("kflow")
    kflow.addHandler(handler)
    kflow.propagate = False
    keep_freed_heap()
    spec = json.loads(Path(argv[0]).read_text())
    config = TrainConfig(**spec["config"])
    # The chief (worker 0 without one) speaks for the cluster, and so does the sidecar evaluator; the others only
    # warn, so that each line shows once.
    speaks = is_chief_process() or (tf_config().get("task") or {}).get("type") == "evaluator"
    kflow.setLevel(logging.INFO if speaks else logging.WARNING)
    # The launcher watches the beats (and asks for the Python stacks with SIGUSR1 when they stop).
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    run_replica(
        get_strategy(config.strategy),
        ModelChoice(**spec["choice"]),
        schema_file=spec["schema_file"],
        devices=spec["devices"],
        working_dir=Path(spec["working_dir"]),
        watch=False,
        end_process=True,
        examples=Examples(spec["examples"]),
        model=Model(spec["model"]),
        model_run=ModelRun(spec["model_run"]),
        config=config,
    )
    return 0


def wait_warm() -> list[str] | None:
    """A warm process (warm_workers.py): the libraries loaded, then its late variables and arguments read from its
    input; None when the run ended without taking it. Only loaded: nothing started (a JAX process joins its peers
    before anything asks for devices) and the heap set as `main` sets it, before the libraries allocate."""
    keep_freed_heap()
    import keras  # noqa: F401  (KERAS_BACKEND is set: an early variable)
    import tensorflow  # noqa: F401

    import kflow.components.trainer.training  # noqa: F401

    if os.environ.get("KERAS_BACKEND") == "jax":
        import jax  # noqa: F401
    job = wait_for_job()
    if job is None:
        return None
    environment, argv = job
    os.environ.update(environment)
    return argv


if __name__ == "__main__":
    lean_imports.install()
    arguments = sys.argv[1:]
    if arguments[:1] == [WARM_FLAG]:
        arguments = wait_warm()
    # the launcher waits for this process's end: not for TensorFlow's teardown
    exit_now(0 if arguments is None else main(arguments))
