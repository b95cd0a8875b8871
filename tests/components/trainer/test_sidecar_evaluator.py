"""The sidecar evaluator on a REAL multi-worker cluster: a TF_CONFIG `evaluator` task that evaluates every
checkpoint the chief writes while training runs, and stops once training has ended."""

from __future__ import annotations

import json

import pytest

from kflow.components.trainer.executor import run
from kflow.pipeline.dsl.artifacts import Model, ModelRun
from tests.components.fixtures import write_examples, write_schema

pytestmark = pytest.mark.distributed


@pytest.mark.slow  # ~30 s: a 2-worker MWMS cluster and its evaluator; make test keeps the refusal below
def test_the_sidecar_evaluator_writes_one_line_per_checkpoint(tmp_path):
    examples, schema = write_examples(tmp_path / "examples"), write_schema(tmp_path / "schema")
    model, model_run = Model(tmp_path / "model"), ModelRun(tmp_path / "model_run")
    run(dataset="mnist", examples=examples, schema=schema, model=model, model_run=model_run,
        working_dir=tmp_path / "work", strategy="multi_worker_mirrored", workers=2, sidecar_evaluator=True, epochs=2,
        batch_size=32, seed=3, max_restarts=0)  # fmt: skip
    lines = [json.loads(line) for line in (model_run.path / "sidecar_eval.jsonl").read_text().splitlines()]
    # The chief checkpoints at each epoch end: steps 13 and 26 (ceil(400 / 32) steps an epoch).
    assert [line["step"] for line in lines] == [13, 26]
    assert set(lines[0]) == {"step", "loss", "accuracy"}
    assert lines[1]["loss"] < lines[0]["loss"]
    # The last line evaluates the final weights: what the Trainer itself measured on Split-eval.
    last_epoch = model_run.history["per_epoch"][-1]
    assert lines[1]["accuracy"] == pytest.approx(last_epoch["val_accuracy"], abs=1e-6)
    assert list((model_run.log_dir / "sidecar_eval").glob("events.out.tfevents.*"))
    # Two workers train, agree and learn; the evaluator is no part of their cluster (no third worker's state).
    states = sorted((model_run.path / "workers").glob("*.json"))
    assert [p.name for p in states] == ["worker-0.json", "worker-1.json"]
    assert len({json.loads(p.read_text())["weights_sha256"] for p in states}) == 1
    losses = [epoch["loss"] for epoch in model_run.history["per_epoch"]]
    assert losses[-1] < losses[0]


def test_a_sidecar_evaluator_needs_a_checkpointing_cluster(tmp_path):
    examples, schema = write_examples(tmp_path / "examples"), write_schema(tmp_path / "schema")
    with pytest.raises(ValueError, match="strategy default has no sidecar evaluator"):
        run(dataset="mnist", examples=examples, schema=schema, model=Model(tmp_path / "m"),
            model_run=ModelRun(tmp_path / "r"), strategy="default", sidecar_evaluator=True)  # fmt: skip
