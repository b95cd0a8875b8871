"""The Evaluator component: scores a Model on one split of the Examples and blesses it or not."""

from __future__ import annotations

from kflow.pipeline.dsl.artifacts import (
    ExampleAnomalies,
    Examples,
    ExampleStatistics,
    Model,
    ModelBlessing,
    ModelEvaluation,
    ModelRun,
    Schema,
)
from kflow.pipeline.dsl.component import Component, ComponentSpec, Parameter
from kflow.pipeline.dsl.config_model import EvaluatorSection, declared_parameter


class Evaluator(Component):
    """Computes the task's metrics of `model` on `split` (overall and per slice), then gates the model.

    `thresholds` (see components/evaluator/gate.py), e.g.
    {"accuracy": {"lower_bound": 0.98, "max_drop": 0.002}, "loss": {"upper_bound": 0.1}}:
    value bounds, and change bounds against a baseline model: the optional `baseline_model` input
    (e.g. another Trainer's model in the same pipeline) or the model at `baseline_model_uri` (the
    standard pipeline resolves it, by default to the latest blessed model of the pipeline). The
    baseline's URI is a parameter that affects the output, so a cached verdict is reused
    only against the same baseline. The optional `statistics` and `anomalies` (StatisticsGen's and
    ExampleValidator's) become the report's data page: `evaluation/statistics.html`, anomalies marked; with
    `previous_statistics` (the previous span's), its figures beside them, the drift view.
    """

    spec = ComponentSpec(
        inputs={
            "examples": Examples,
            "schema": Schema,
            "model": Model,
            "model_run": ModelRun,
            "baseline_model": Model,
            "statistics": ExampleStatistics,
            "anomalies": ExampleAnomalies,
            "previous_statistics": ExampleStatistics,
        },
        optional_inputs=frozenset({"model_run", "baseline_model", "statistics", "anomalies", "previous_statistics"}),
        outputs={"evaluation": ModelEvaluation, "blessing": ModelBlessing},
        parameters={
            "split": declared_parameter(EvaluatorSection, "split", str),
            "batch_size": declared_parameter(EvaluatorSection, "batch_size", int),
            "thresholds": declared_parameter(EvaluatorSection, "thresholds", dict),
            "slices": declared_parameter(EvaluatorSection, "slices", list),
            "baseline_model_uri": Parameter(str, default=None, description="the Model to compare against, if any"),
            "baseline_module_digest": Parameter(
                str, default=None, description="sha256 of the baseline's user module when it was blessed"
            ),
            "no_baseline_reason": Parameter(str, default=None, description="why there is no baseline, for the verdict"),
            "require_baseline": declared_parameter(EvaluatorSection, "require_baseline", bool),
            "report_title": Parameter(str, default=None, description="the report's title: the pipeline's name"),
            "seed": declared_parameter(EvaluatorSection, "seed", int),
        },
        executor="kflow.components.evaluator.executor:run",
        warm_up="kflow.components.evaluator.serving_check:warm_up",
    )
