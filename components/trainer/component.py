"""The Trainer component: Examples + Schema in, a trained Model and its ModelRun out."""

from __future__ import annotations

from kflow.components.trainer.strategies import STRATEGIES, get_strategy
from kflow.pipeline.dsl.artifacts import Examples, Model, ModelRun, Schema
from kflow.pipeline.dsl.component import Component, ComponentSpec, Parameter


class Trainer(Component):
    """Fits a registered Keras model (`model_name`) on Split-train, validating on Split-eval.

    Outputs `model` (model.keras and the serving SavedModel in Format-Serving/) and
    `model_run` (TensorBoard logs and history.json with per-epoch metrics and throughput).
    """

    spec = ComponentSpec(
        inputs={"examples": Examples, "schema": Schema},
        outputs={"model": Model, "model_run": ModelRun},
        parameters={
            "model_name": Parameter(str, default="mnist_convnet", description="a name in the model registry"),
            "strategy": Parameter(
                str,
                default="default",
                description=" | ".join(STRATEGIES),
            ),
            "task": Parameter(str, default="mnist", description="a registered dataset (kflow.components.datasets)"),
            "model_options": Parameter(dict, default={}, description="keyword arguments for the model factory"),
            "workers": Parameter(int, default=2, description="local cluster size for the multi-process strategies"),
            "parameter_servers": Parameter(int, default=1, description="for strategy parameter_server"),
            "max_restarts": Parameter(int, default=0, description="cluster restarts from the last checkpoint"),
            "weight_decay": Parameter(float, default=0.0, description="adamw; 0 means Keras' default 0.004"),
            "schedule": Parameter(str, default="constant", description="constant | cosine | polynomial"),
            "warmup_steps": Parameter(int, default=0),
            "mixed_precision": Parameter(bool, default=False),
            "checkpoint_every_steps": Parameter(int, optional=True, description="unset: at every epoch end"),
            "log_every_steps": Parameter(int, default=100, affects_output=False),
            "epochs": Parameter(int, default=3),
            "batch_size": Parameter(int, default=128, description="the global batch size"),
            "optimizer": Parameter(str, default="adam", description="adam | adamw | sgd"),
            "learning_rate": Parameter(float, default=0.001),
            "steps_per_epoch": Parameter(int, optional=True, description="unset: one pass over the train split"),
            "seed": Parameter(int, default=42),
            "shuffle_buffer": Parameter(int, default=10000, description="in examples; 0 turns shuffling off"),
            "early_stopping_patience": Parameter(
                int, optional=True, description="unset: off; else epochs without val_loss improvement"
            ),
        },
        executor="kflow.components.trainer.executor:run",
    )

    def cluster_replicas(self) -> dict[str, int]:
        """The strategy's cluster for `workers` and `parameter_servers`; {} when that is one process."""
        replicas = get_strategy(self.parameters["strategy"]).replicas(
            self.parameters["workers"], self.parameters["parameter_servers"]
        )
        return replicas if sum(replicas.values()) > 1 else {}
