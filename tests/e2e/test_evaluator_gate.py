"""The blessing gate end to end: baseline resolution, the CLI's exit code, `kflow show` and report.html."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kflow.pipeline.app.standard_pipeline import build_pipeline, latest_blessed_model
from kflow.pipeline.cli.main import _gate
from kflow.pipeline.dsl.config import load_config
from kflow.pipeline.runners.run_record import Run
from tests.conftest import REPO

DEMO = REPO / "pipeline" / "configs" / "demo.yaml"


def fake_run(
    pipeline_dir: Path, run_id: str, blessed: bool | None, status: str = "succeeded", config: dict | None = None
) -> Path:
    """A run folder with a run.json whose evaluate evaluated `<run>/train/model` (blessed or not)."""
    run_dir = pipeline_dir / run_id
    model, blessing = run_dir / "train" / "model", run_dir / "evaluate" / "blessing"
    model.mkdir(parents=True)
    blessing.mkdir(parents=True)
    components = {}
    if blessed is not None:
        (blessing / ("BLESSED" if blessed else "NOT_BLESSED")).touch()
        checks = [{"metric": "accuracy", "bound": "lower_bound", "threshold": 0.9, "value": 0.5, "passed": blessed}]
        (blessing / "blessing.json").write_text(json.dumps({"blessed": blessed, "checks": checks}))
        components["evaluate"] = {
            "status": status,
            "parameters": {"baseline_model_uri": None},
            "inputs": {"model": {"type": "Model", "uri": str(model)}},
            "outputs": {"blessing": {"type": "ModelBlessing", "uri": str(blessing)}},
        }
    record = {"run_id": run_id, "metadata": {"config": config or {}}, "components": components}
    (run_dir / "run.json").write_text(json.dumps(record))
    return run_dir


def test_latest_blessed_model_skips_unblessed_failed_and_unfinished_runs(tmp_path):
    assert latest_blessed_model(tmp_path) is None
    fake_run(tmp_path, "20260101-000000-aaaa", blessed=True)
    blessed = fake_run(tmp_path, "20260102-000000-bbbb", blessed=True)
    fake_run(tmp_path, "20260103-000000-cccc", blessed=False)
    fake_run(tmp_path, "20260104-000000-dddd", blessed=True, status="failed")
    fake_run(tmp_path, "20260105-000000-eeee", blessed=None)  # Stopped before evaluate.
    assert latest_blessed_model(tmp_path) == str(blessed / "train" / "model")


def test_the_builder_passes_the_baseline_to_the_evaluator_only_for_local_runs(tmp_path):
    blessed = fake_run(tmp_path / "demo", "20260102-000000-bbbb", blessed=True)
    config = load_config(DEMO, [f"pipeline_root={tmp_path}"])
    evaluate = {node.id: node for node in build_pipeline(config, local_runs=True).components}["evaluate"]
    assert evaluate.parameters["baseline_model_uri"] == str(blessed / "train" / "model")
    assert evaluate.parameters["slices"] == [{"by": "label"}]
    # Compiling for Kubeflow must not depend on what ran locally; `none` never compares.
    compiled = {node.id: node for node in build_pipeline(config).components}["evaluate"]
    assert compiled.parameters["baseline_model_uri"] is None
    # A re-run of the blessed run's data and trainer config re-evaluates the same cached model:
    # it keeps that run's own baseline (here none), so the whole run stays cached.
    fake_run(tmp_path / "demo", "20260103-000000-cccc", blessed=True, config=json.loads(json.dumps(config.to_dict())))
    evaluate = {node.id: node for node in build_pipeline(config, local_runs=True).components}["evaluate"]
    assert evaluate.parameters["baseline_model_uri"] is None
    config = load_config(DEMO, [f"pipeline_root={tmp_path}", "evaluator.baseline=none"])
    evaluate = {node.id: node for node in build_pipeline(config, local_runs=True).components}["evaluate"]
    assert evaluate.parameters["baseline_model_uri"] is None


def test_the_cli_gate_fails_or_warns_naming_the_failed_check(tmp_path, capsys):
    run = Run.load(fake_run(tmp_path, "20260101-000000-aaaa", blessed=False))
    assert _gate(run, "fail") == 1
    assert "NOT BLESSED; failed checks: accuracy lower_bound 0.9 (value 0.5)" in capsys.readouterr().err
    assert _gate(run, "warn") == 0
    assert "warning: evaluate: the model is NOT BLESSED" in capsys.readouterr().err
    assert _gate(Run.load(fake_run(tmp_path, "20260102-000000-bbbb", blessed=True)), "fail") == 0


def newest_run(root: Path) -> Path:
    return sorted((root / "demo").glob("*/run.json"))[-1].parent


@pytest.mark.slow
def test_a_worse_model_is_not_blessed_against_the_first(tmp_path, run_kflow):
    """Demo twice: the first model is blessed, a deliberately worse second one is not (exit 1)."""
    first = run_kflow("run", DEMO, "--pipeline-root", tmp_path, "--set", "evaluator.on_not_blessed=fail")
    assert first.returncode == 0, first.stderr[-3000:]
    first_dir = newest_run(tmp_path)
    assert (first_dir / "evaluate" / "blessing" / "BLESSED").exists()

    worse = ("--set", "trainer.epochs=1", "--set", "trainer.optimizer.learning_rate=0.00001")
    second = run_kflow("run", DEMO, "--pipeline-root", tmp_path, *worse, "--set", "evaluator.on_not_blessed=fail")
    assert second.returncode == 1, second.stderr[-3000:]
    assert "NOT BLESSED; failed checks:" in second.stderr and "accuracy max_drop 0.01" in second.stderr
    second_dir = newest_run(tmp_path)
    verdict = json.loads((second_dir / "evaluate" / "blessing" / "blessing.json").read_text())
    assert verdict["blessed"] is False
    assert verdict["baseline_model"] == str(first_dir / "train" / "model")
    assert {check["bound"] for check in verdict["checks"] if not check["passed"]} >= {"max_drop"}

    shown = run_kflow("show", tmp_path / "demo")
    assert shown.returncode == 0
    assert "blessed=False" in shown.stdout and "accuracy change" in shown.stdout
    report = (second_dir / "evaluate" / "evaluation" / "report.html").read_text()
    assert "NOT BLESSED" in report and "accuracy change" in report and "label=9" in report

    # The same worse run with on_not_blessed=warn: fully cached (same baseline), exit 0 with a warning.
    warned = run_kflow("run", DEMO, "--pipeline-root", tmp_path, *worse, "--set", "evaluator.on_not_blessed=warn")
    assert warned.returncode == 0, warned.stderr[-3000:]
    assert "warning: evaluate: the model is NOT BLESSED" in warned.stderr
    record = json.loads((newest_run(tmp_path) / "run.json").read_text())
    assert record["components"]["evaluate"]["status"] == "cached"
