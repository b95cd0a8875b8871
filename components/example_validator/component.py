"""ExampleValidator: each split's statistics checked against the schema; the anomalies go to an artifact."""

from __future__ import annotations

from kflow.pipeline.dsl.artifacts import ExampleAnomalies, ExampleStatistics, Schema
from kflow.pipeline.dsl.component import Component, ComponentSpec, Parameter


class ExampleValidator(Component):
    """Finds missing and unexpected features, type mismatches, unknown categories, values out of range and
    categorical drift from Split-train (components/example_validator/executor.py)."""

    spec = ComponentSpec(
        # With spans (pipeline/app/span_pipeline.py): the newest span's and the previous span's statistics.
        inputs={
            "statistics": ExampleStatistics,
            "schema": Schema,
            "span_statistics": ExampleStatistics,
            "previous_span_statistics": ExampleStatistics,
        },
        optional_inputs=frozenset({"span_statistics", "previous_span_statistics"}),
        outputs={"anomalies": ExampleAnomalies},
        parameters={
            "on_drift": Parameter(
                str, default="warn", description="What drift between the spans does: fail (refuse to train) or warn."
            ),
            "drift_spans": Parameter(list, default=[], description="[newest span, previous span], as compared."),
            "l_infinity_threshold": Parameter(float, default=0.25, description="Categorical drift threshold."),
            "jensen_shannon_threshold": Parameter(float, default=0.1, description="Numeric drift threshold."),
            "on_anomaly": Parameter(
                str,
                default="fail",
                description="What the Trainer does with anomalous data: fail (refuse to train) or warn.",
            ),
        },
        executor="kflow.components.example_validator.executor:run",
    )
