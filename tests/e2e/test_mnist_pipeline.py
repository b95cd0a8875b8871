"""The MNIST pipeline on the real data in ../shared/datasets/mnist."""

import json

import pytest

from tests.conftest import REPO, shared_dataset

MNIST = REPO / "pipeline" / "configs" / "mnist.yaml"

pytestmark = pytest.mark.real_data


def run_dir(root):
    return sorted((root / "mnist").glob("*/run.json"))[-1].parent


@pytest.mark.slow  # About 27 s; make test ingests real MNIST (test_real_data.py) and trains on it elsewhere.
def test_a_short_training_on_real_mnist_learns(tmp_path, run_kflow):
    data = shared_dataset("mnist")
    result = run_kflow(
        "run", MNIST, "--pipeline-root", tmp_path, "--set", f"data.source.path={data}",
        "--set", "trainer.epochs=1", "--set", "trainer.steps_per_epoch=150", "--set", "evaluator.thresholds={}",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    record = json.loads((run_dir(tmp_path) / "run.json").read_text())
    assert record["components"]["ingest"]["summary"]["read"] == 70000
    metrics = json.loads((run_dir(tmp_path) / "evaluate" / "evaluation" / "metrics.json").read_text())
    assert metrics["example_count"] == 10000
    assert metrics["accuracy"] > 0.9


@pytest.mark.slow
def test_the_mnist_config_reaches_99_percent_on_the_official_test_set(tmp_path, run_kflow):
    data = shared_dataset("mnist")
    result = run_kflow("run", MNIST, "--pipeline-root", tmp_path, "--set", f"data.source.path={data}", timeout=1800)
    assert result.returncode == 0, result.stderr[-3000:]
    metrics = json.loads((run_dir(tmp_path) / "evaluate" / "evaluation" / "metrics.json").read_text())
    assert metrics["accuracy"] >= 0.99
    assert (run_dir(tmp_path) / "evaluate" / "blessing" / "BLESSED").exists()
