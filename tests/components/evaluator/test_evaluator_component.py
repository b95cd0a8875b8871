"""The Evaluator spec and its wiring to the Trainer's outputs."""

from __future__ import annotations

from kflow.components.evaluator import Evaluator
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
from kflow.pipeline.dsl.component import Channel


def test_spec_wiring_and_defaults():
    spec = Evaluator.spec
    assert dict(spec.inputs) == {
        "examples": Examples,
        "schema": Schema,
        "model": Model,
        "model_run": ModelRun,
        "baseline_model": Model,
        "statistics": ExampleStatistics,
        "anomalies": ExampleAnomalies,
        "previous_statistics": ExampleStatistics,
    }
    assert spec.optional_inputs == {"model_run", "baseline_model", "statistics", "anomalies", "previous_statistics"}
    assert dict(spec.outputs) == {"evaluation": ModelEvaluation, "blessing": ModelBlessing}
    assert spec.executor == "kflow.components.evaluator.executor:run"
    evaluator = Evaluator(
        "evaluate",
        examples=Channel("ingest", "examples", Examples),
        schema=Channel("ingest", "schema", Schema),
        model=Channel("train", "model", Model),
        model_run=Channel("train", "model_run", ModelRun),
        parameters={"thresholds": {"accuracy": {"lower_bound": 0.98}}},
    )
    assert evaluator.parameters == {
        "split": "test",
        "batch_size": 256,
        "thresholds": {"accuracy": {"lower_bound": 0.98}},
        "slices": [],
        "baseline_model_uri": None,
        "baseline_module_digest": None,
        "no_baseline_reason": None,
        "require_baseline": False,
        "report_title": None,
        "seed": 0,
    }


def test_the_baseline_model_is_part_of_the_cache_key():
    """A cached verdict must not be reused against a different baseline model."""
    channels = {
        "examples": Channel("ingest", "examples", Examples),
        "schema": Channel("ingest", "schema", Schema),
        "model": Channel("train", "model", Model),
        "model_run": Channel("train", "model_run", ModelRun),
    }
    first = Evaluator("evaluate", parameters={"baseline_model_uri": "/runs/a/train/model"}, **channels)
    second = Evaluator("evaluate", parameters={"baseline_model_uri": "/runs/b/train/model"}, **channels)
    assert first.cache_parameters["baseline_model_uri"] == "/runs/a/train/model"
    assert first.cache_parameters != second.cache_parameters
