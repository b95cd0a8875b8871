"""pipeline/configs/mnist_compare.yaml on the demo data: two trainers at once, two evaluators, one push."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest
from kfp import components

from tests.conftest import REPO
from tests.pipeline.compiler.kfp_player import play

COMPARE = REPO / "pipeline" / "configs" / "mnist_compare.yaml"


def demo_overrides(tmp_path: Path, epochs: int = 2) -> list[str]:
    overrides = {
        "data.source.format": "sklearn_digits",
        "data.shards_per_split": 1,
        "trainer.epochs": epochs,
        "trainer.batch_size": 32,
        # A quick training: a lower floor, the comparison is what is tested.
        "components.evaluate_mwms.parameters.thresholds": "{accuracy: {lower_bound: 0.5, max_drop: 0}}",
        "components.evaluate_jax.parameters.thresholds": "{accuracy: {lower_bound: 0.5, min_gain: 0}}",
        "components.push_mwms.parameters.push_destination": tmp_path / "serving",
        "components.push_jax.parameters.push_destination": tmp_path / "serving",
    }
    return [item for key, value in overrides.items() for item in ("--set", f"{key}={value}")]


def newest_record(root: Path) -> dict:
    return json.loads(sorted(root.glob("mnist-compare/*/run.json"))[-1].read_text())


def interval(entry: dict) -> tuple[datetime, datetime]:
    return datetime.fromisoformat(entry["started_at"]), datetime.fromisoformat(entry["finished_at"])


@pytest.mark.slow  # About 60 s; the declared-DAG tests (toy components) and the JAX tests cover its parts.
def test_compare_trains_both_at_once_and_pushes_the_better_model_once(tmp_path, run_kflow):
    first = run_kflow("run", COMPARE, "--pipeline-root", tmp_path / "runs", *demo_overrides(tmp_path))
    assert first.returncode == 0, first.stderr[-3000:]
    record = newest_record(tmp_path / "runs")
    nodes = record["components"]
    (mwms_start, mwms_end), (jax_start, jax_end) = interval(nodes["train_mwms"]), interval(nodes["train_jax"])
    assert mwms_start < jax_end and jax_start < mwms_end, "the two trainers did not overlap"

    accuracy = {name: nodes[f"evaluate_{name}"]["summary"]["accuracy"] for name in ("mwms", "jax")}
    winner = "jax" if accuracy["jax"] > accuracy["mwms"] else "mwms"
    loser = {"mwms": "jax", "jax": "mwms"}[winner]
    assert nodes[f"evaluate_{winner}"]["summary"]["blessed"] is True
    assert nodes[f"evaluate_{loser}"]["summary"]["blessed"] is False
    assert nodes[f"push_{winner}"]["status"] == "succeeded" and nodes[f"push_{loser}"]["status"] == "skipped"
    versions = sorted(p.name for p in (tmp_path / "serving" / "mnist").iterdir())
    assert versions == ["1"]
    pushed = json.loads((Path(nodes[f"push_{winner}"]["outputs"]["pushed_model"]["uri"]) / "push.json").read_text())
    assert pushed["model"] == nodes[f"train_{winner}"]["outputs"]["model"]["uri"]
    assert "NOT BLESSED" in first.stderr  # The losing model is reported, as a warning (on_not_blessed: warn).

    second = run_kflow("run", COMPARE, "--pipeline-root", tmp_path / "runs", *demo_overrides(tmp_path))
    assert second.returncode == 0, second.stderr[-3000:]
    statuses = {node: entry["status"] for node, entry in newest_record(tmp_path / "runs")["components"].items()}
    assert statuses.pop(f"push_{loser}") == "skipped"
    assert set(statuses.values()) == {"cached"}
    assert sorted(p.name for p in (tmp_path / "serving" / "mnist").iterdir()) == ["1"]


@pytest.mark.slow
def test_the_compiled_compare_pipeline_plays_both_branches_and_one_push(tmp_path, run_kflow):
    """Both trainers in their task's container: MWMS as one worker, and `mirrored` over 2 devices in place of
    the JAX strategy, since two MWMS workers would be a TFJob and a JAX strategy a JAXJob, which need a
    Kubernetes cluster (about 2 minutes)."""
    package = tmp_path / "pipeline.yaml"
    overrides = [
        *demo_overrides(tmp_path),
        *("--set", "components.train_mwms.parameters.workers=1"),
        *("--set", "components.train_jax.parameters.strategy=mirrored"),
    ]
    compiled = run_kflow("compile", COMPARE, "-o", package, "--image", "kflow:test", *overrides)
    assert compiled.returncode == 0, compiled.stderr[-3000:]
    assert components.load_component_from_file(str(package)).name == "mnist-compare"
    played = play(package, tmp_path / "played", cwd=REPO, timeout=900)
    verdicts = {name: played[f"evaluate-{name}"]["blessing_blessed"] for name in ("mwms", "jax")}
    assert sorted(verdicts.values()) == ["false", "true"]
    winner = next(name for name, verdict in verdicts.items() if verdict == "true")
    assert f"push-{winner}" in played  # KFP task names: the node ids with dashes
    assert f"push-{'jax' if winner == 'mwms' else 'mwms'}" not in played
    assert sorted(p.name for p in (tmp_path / "serving" / "mnist").iterdir()) == ["1"]
