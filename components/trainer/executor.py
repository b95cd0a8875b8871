"""Trainer executor: trains a dataset's task under a distribution strategy and exports the model.

The strategy (kflow.components.trainer.strategies) decides the path: `model.fit` where Keras
supports it (one device, mirrored, the Keras distribution API), the custom loop or the
explicit JAX loop otherwise, and for multi-process strategies a local cluster of worker
processes started here when neither TF_CONFIG nor a JAXJob's variables say this process is
already one of a cluster's (a Kubeflow TFJob's or JAXJob's pods). A strategy on another
Keras backend than this process's always trains in worker processes of its own.
"""

from __future__ import annotations

import dataclasses
import logging
import shutil
from pathlib import Path
from typing import Any

from kflow.components.datasets import get_dataset
from kflow.components.trainer.config import TrainerSettings
from kflow.components.trainer.heap import keep_freed_heap
from kflow.components.trainer.launcher import launch
from kflow.components.trainer.replica import run_replica
from kflow.components.trainer.strategies import get_strategy
from kflow.components.trainer.strategies.cluster_env import in_cluster, is_chief_process
from kflow.components.trainer.worker import worker_spec
from kflow.components.util.corrupt_examples import reads_examples
from kflow.components.util.schema import input_types, load_schema
from kflow.components.util.tuned_settings import apply_settings, shown_value
from kflow.pipeline.dsl.artifacts import (
    ExampleAnomalies,
    Examples,
    HyperParameters,
    Model,
    ModelRun,
    Schema,
    TransformGraph,
)
from kflow.pipeline.dsl.component import InputsRefused
from kflow.pipeline.dsl.scratch import scratch_dir

log = logging.getLogger("kflow.trainer")


@reads_examples  # damaged files: one line naming the Examples, from the launched cluster too
def run(
    *,
    examples: Examples,
    schema: Schema,
    model: Model,
    model_run: ModelRun,
    working_dir: Path | None = None,
    anomalies: ExampleAnomalies | None = None,
    hyperparameters: HyperParameters | None = None,
    transform_graph: TransformGraph | None = None,
    **parameters: Any,
) -> dict[str, Any]:
    """Trains the task's model on Split-train (validating on Split-eval when present) and exports it.

    `parameters` are the Trainer's settings (components/trainer/config.py), each optional:
    `strategy`, `epochs`, `batch_size` (global: divided among the replicas), `workers`, ...
    Writes `model.keras`, the serving SavedModel and the task's assets (with `task.json`) into
    `model`, TensorBoard logs and `history.json` into `model_run`, and returns the last epoch's
    metrics. `working_dir` keeps the checkpoints a re-run resumes from.
    """
    tuned = hyperparameters.best["settings"] if hyperparameters is not None else None
    if tuned:  # A tuner's best settings (config names: trainer.optimizer.learning_rate) over the parameters.
        log.info(
            "train: with the tuner's settings %s", ", ".join(f"{k}={shown_value(v)}" for k, v in sorted(tuned.items()))
        )
        parameters = apply_settings(parameters, tuned)
    if transform_graph is not None:  # every training process takes its preprocessing from the Transform's graph
        parameters = {**parameters, "transform_graph_uri": transform_graph.uri}
    settings = TrainerSettings.from_parameters(parameters)
    keep_freed_heap()  # before the first step's tensors (heap.py: half of a CPU step's time, otherwise)
    # Only the blocking anomalies (errors) stop a run; an artifact from before severities counts every one.
    if anomalies is not None and anomalies.summary.get("blocking", anomalies.summary["count"]):
        verdict = anomalies.summary
        if verdict["on_anomaly"] == "fail":
            where = anomalies.path / "anomalies.json"
            raise InputsRefused(f"{verdict['message']}; see {where}; set data.on_anomaly: warn to train anyway")
        log.warning("train: training anyway (on_anomaly: warn): %s", verdict["message"])
    drift = anomalies.summary.get("drift") or {} if anomalies is not None else {}
    if drift.get("blocking"):  # data.on_drift: fail (components/example_validator/span_drift.py)
        where = anomalies.path / "anomalies.json"
        raise InputsRefused(f"{drift['message']}; see {where}; set data.on_drift: warn to train anyway")
    choice, config, cluster_config = settings.model, settings.training, settings.cluster
    strategy = config.strategy
    cluster_strategy = get_strategy(strategy)
    replicas = cluster_strategy.replicas(
        cluster_config.workers, cluster_config.parameter_servers, cluster_config.sidecar_evaluator
    )
    dataset = choice.dataset
    limit = get_dataset(dataset).backend_problem(cluster_strategy.backend, input_types(load_schema(schema.file)))
    if limit:
        raise ValueError(f"strategy {strategy} trains on {cluster_strategy.backend}, where {dataset} cannot: {limit}")
    train_examples = examples.recorded_counts.get("train")
    devices = (cluster_config.devices or 1) if cluster_strategy.devices else 1
    batch = config.batch_for(train_examples, replicas.get("worker", 1) * devices)
    if batch != config.batch_size:
        log.warning(
            "train: the train split holds %d examples, fewer than trainer.batch_size %d: training on batches of %d",
            train_examples,
            config.batch_size,
            batch,
        )
        config = dataclasses.replace(config, batch_size=batch)
    if choice.module and choice.module_source is None:
        raise ValueError(f"trainer.module: {choice.module} was not read when the pipeline was built")
    temporary = None
    if working_dir is None:
        temporary = scratch_dir("trainer")
        working_dir = Path(temporary)
    try:
        if cluster_strategy.multi_process and not in_cluster():
            # The launched processes load the task themselves, as a cluster job's pods do: this one needs no
            # TensorFlow, and their start-up is not queued behind its own.
            shown = ", ".join(
                f"{count} {name}{'s' if count > 1 and name != 'ps' else ''}" for name, count in replicas.items()
            )
            log.info("train: starting a local %s cluster: %s", strategy, shown)
            restarts = launch(
                worker_spec(
                    choice,
                    config,
                    schema_file=schema.file,
                    devices=cluster_config.devices,
                    examples=examples,
                    model=model,
                    model_run=model_run,
                    working_dir=working_dir,
                ),
                spec_dir=Path(working_dir) / "launch",
                workers=cluster_config.workers,
                parameter_servers=cluster_config.parameter_servers,
                devices=cluster_config.devices,
                evaluator=cluster_config.sidecar_evaluator,
                max_restarts=cluster_config.max_restarts,
                on_start=_load_tensorflow,
            )
            history = model_run.history
            history["restarts"] = restarts
            model_run.write_json("history.json", history)
        else:  # This process trains (alone, or as a pod of a cluster job: no launcher beside it watches its beats).
            history = run_replica(
                cluster_strategy,
                choice,
                schema_file=schema.file,
                devices=cluster_config.devices,
                working_dir=Path(working_dir),
                watch=True,
                examples=examples,
                model=model,
                model_run=model_run,
                config=config,
            )
            if history is None:  # a role that serves (a PS cluster's workers and servers) or evaluates on the side
                return {}
        if is_chief_process() and not model.serving_uri.exists():  # Saved by a process of another backend.
            from kflow.components.trainer.training import export_serving

            export_serving(model)
    finally:
        if temporary is not None:
            shutil.rmtree(temporary, ignore_errors=True)
    if tuned is not None and is_chief_process():
        model.set_metadata(hyperparameters=tuned)
    last = history["per_epoch"][-1] if history["per_epoch"] else {}
    return {
        "epochs": history["epochs"],
        # The last epoch's metrics: the task's own (accuracy, masked_accuracy, auc...) and their val_ twins.
        **{name: value for name, value in last.items() if name not in _EPOCH_BOOKKEEPING},
        "examples_per_second": history["examples_per_second"],
        "final_step": history["final_step"],
        "start_step": history["start_step"],
        # The model it started from (not the one resolved: one whose layers differ is passed over, warm_start.py).
        **({"warm_started_from": history["warm_started_from"]} if history.get("warm_started_from") else {}),
    }


def _load_tensorflow(_processes: dict) -> None:
    """Loads TensorFlow and its Keras while the launched processes start, on the core their own (single-threaded)
    imports leave free: what this process does next needs them (the export of a JAX cluster's model; a local
    run's Evaluator), and would otherwise import them, 7 s here, after the training."""
    import kflow.components.trainer.training  # noqa: F401

    log.debug("train: TensorFlow loaded while the cluster starts")


_EPOCH_BOOKKEEPING = ("epoch", "step", "seconds", "examples_per_second")
