"""ExampleValidator: each split's statistics checked against the schema; the anomalies go to an artifact."""

from __future__ import annotations

from kflow.pipeline.dsl.artifacts import ExampleAnomalies, ExampleStatistics, Schema
from kflow.pipeline.dsl.component import Component, ComponentSpec, Parameter


class ExampleValidator(Component):
    """Finds missing and unexpected features, type mismatches, unknown categories, values out of range and
    categorical drift from Split-train (components/example_validator/executor.py)."""

    spec = ComponentSpec(
        inputs={"statistics": ExampleStatistics, "schema": Schema},
        outputs={"anomalies": ExampleAnomalies},
        parameters={
            "on_anomaly": Parameter(
                str,
                default="fail",
                description="What the Trainer does with anomalous data: fail (refuse to train) or warn.",
            ),
        },
        executor="kflow.components.example_validator.executor:run",
    )
