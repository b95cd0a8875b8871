"""The Evaluator spec and its wiring to the Trainer's output."""

from __future__ import annotations

from components.evaluator import Evaluator
from pipeline.dsl.artifacts import Examples, Model, ModelBlessing, ModelEvaluation, Schema
from pipeline.dsl.component import Channel


def test_spec_wiring_and_defaults():
    spec = Evaluator.spec
    assert dict(spec.inputs) == {"examples": Examples, "schema": Schema, "model": Model}
    assert dict(spec.outputs) == {"evaluation": ModelEvaluation, "blessing": ModelBlessing}
    assert spec.executor == "components.evaluator.executor:run"
    evaluator = Evaluator(
        "evaluate",
        examples=Channel("ingest", "examples", Examples),
        schema=Channel("ingest", "schema", Schema),
        model=Channel("train", "model", Model),
        parameters={"thresholds": {"accuracy": {"lower_bound": 0.98}}},
    )
    assert evaluator.parameters == {
        "split": "test",
        "batch_size": 256,
        "thresholds": {"accuracy": {"lower_bound": 0.98}},
    }
