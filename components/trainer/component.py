"""The Trainer component: Examples + Schema in, a trained Model and its ModelRun out."""

from __future__ import annotations

from pathlib import Path

from kflow.components.datasets.module_imports import module_parameters
from kflow.components.datasets.user_module import module_problems
from kflow.components.trainer.config import TrainerSettings, component_parameters
from kflow.components.trainer.strategies import get_strategy
from kflow.pipeline.dsl.artifacts import (
    ExampleAnomalies,
    Examples,
    HyperParameters,
    Model,
    ModelRun,
    Schema,
    TransformGraph,
)
from kflow.pipeline.dsl.component import Component, ComponentSpec


class Trainer(Component):
    """Fits a registered Keras model (`model_name`) of a dataset (`dataset`) on Split-train, validating on Split-eval.

    `anomalies` (optional): ExampleValidator's verdict on the Examples; the Trainer runs after it
    and logs how many anomalies the data it trains on has (on_anomaly: warn lets them through).
    `hyperparameters` (optional): a Tuner's best settings, which override these parameters; the Model's
    metadata.json records them as its `hyperparameters` property.
    `transform_graph` (optional): a Transform's graph; every training process takes the task's preprocessing
    from it (nothing is learnt from the data while training) and the model embeds its preprocessing model.

    Outputs `model` (model.keras and the serving SavedModel in Format-Serving/) and
    `model_run` (TensorBoard logs and history.json with per-epoch metrics and throughput).
    """

    spec = ComponentSpec(
        inputs={
            "examples": Examples,
            "schema": Schema,
            "anomalies": ExampleAnomalies,
            "hyperparameters": HyperParameters,
            "transform_graph": TransformGraph,
        },
        optional_inputs=frozenset({"anomalies", "hyperparameters", "transform_graph"}),
        outputs={"model": Model, "model_run": ModelRun},
        parameters=component_parameters(),
        executor="kflow.components.trainer.executor:run",
        renamed_parameters={"task": "dataset"},
        warm_up="kflow.components.trainer.launcher:warm_up",
    )

    def _bind_parameters(self, parameters: dict) -> dict:
        """Reads `module` (the user's model file) into `module_source` when the pipeline is built."""
        module = parameters.get("module")
        if module and parameters.get("module_source") is None and not module_problems(module):
            parameters = {**parameters, **module_parameters(module)}
        return super()._bind_parameters(parameters)

    def check_parameters(self) -> list[str]:
        """What the executor would refuse when it reads its settings (an unknown strategy, a bad mesh, …)."""
        try:
            TrainerSettings.from_parameters(self.parameters)
        except (ValueError, TypeError) as error:
            return [str(error)]
        module = self.parameters.get("module")
        return [f"module: {problem}" for problem in module_problems(module)] if module else []

    def plan_notes(self) -> list[str]:
        """Which model trainer.warm_start resolved to (runs/<pipeline>/<run id>/<node>/model: said by its run)."""
        if not self.parameters.get("warm_start"):
            return []
        uri = self.parameters.get("warm_start_model_uri")
        if uri is None:
            return [f"from scratch: {self.parameters.get('warm_start_reason') or 'no model to warm-start from'}"]
        return [f"warm start from {Path(uri).parent.parent.name}"]

    def cluster_replicas(self) -> dict[str, int]:
        """The strategy's cluster for `workers` and `parameter_servers`; {} when that is one process."""
        replicas = get_strategy(self.parameters["strategy"]).replicas(
            self.parameters["workers"], self.parameters["parameter_servers"], self.parameters["sidecar_evaluator"]
        )
        return replicas if sum(replicas.values()) > 1 else {}

    def cluster_restarts(self) -> int:
        return self.parameters["max_restarts"]

    def cluster_framework(self) -> str:
        """What the cluster's processes run on: `jax` for a JAX strategy, else `tensorflow`."""
        return get_strategy(self.parameters["strategy"]).backend
