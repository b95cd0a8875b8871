"""The Evaluator component: scores a Model on one split of the Examples and blesses it or not."""

from __future__ import annotations

from pipeline.dsl.artifacts import Examples, Model, ModelBlessing, ModelEvaluation, Schema
from pipeline.dsl.component import Component, ComponentSpec, Parameter


class Evaluator(Component):
    """Computes loss, accuracy and per-class accuracy of `model` on `split`, then checks the thresholds.

    `thresholds` follows TFMA's naming, e.g. {"accuracy": {"lower_bound": 0.98}, "loss": {"upper_bound": 0.1}};
    the model is blessed when every bound holds (and always when there are none).
    """

    spec = ComponentSpec(
        inputs={"examples": Examples, "schema": Schema, "model": Model},
        outputs={"evaluation": ModelEvaluation, "blessing": ModelBlessing},
        parameters={
            "split": Parameter(str, default="test"),
            "batch_size": Parameter(int, default=256),
            "thresholds": Parameter(dict, default={}, description="{metric: {lower_bound: x, upper_bound: y}}"),
        },
        executor="components.evaluator.executor:run",
    )
