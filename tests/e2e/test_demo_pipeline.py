"""The offline demo DAG end to end through the CLI: ingest → transform → train → evaluate, caching, re-runs."""

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO

DEMO = REPO / "pipeline" / "configs" / "demo.yaml"


def only_run(root: Path, pipeline="demo") -> Path:
    runs = sorted((root / pipeline).glob("*/run.json"))
    return runs[-1].parent


@pytest.fixture(scope="module")
def first_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("root")
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "kflow.pipeline.cli.main", "run", str(DEMO), "--pipeline-root", str(root)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=900,
    )
    seconds = time.perf_counter() - started
    assert result.returncode == 0, result.stderr[-3000:]
    return root, only_run(root), seconds, result


def test_demo_runs_every_component_and_blesses_an_accurate_model(first_run):
    root, run_dir, _, result = first_run
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "succeeded"
    assert [(node, entry["status"]) for node, entry in record["components"].items()] == [
        ("ingest", "succeeded"),
        ("transform", "succeeded"),
        ("train", "succeeded"),
        ("evaluate", "succeeded"),
    ]
    stats = json.loads((run_dir / "ingest" / "examples" / "stats.json").read_text())
    assert stats["read"] == 1797
    assert sum(stats["accepted"].values()) + sum(stats["rejected"].values()) == 1797
    metrics = json.loads((run_dir / "evaluate" / "evaluation" / "metrics.json").read_text())
    assert metrics["accuracy"] >= 0.95
    assert metrics["example_count"] == stats["accepted"]["test"]
    assert (run_dir / "evaluate" / "blessing" / "BLESSED").exists()
    assert (run_dir / "train" / "model" / "model.keras").is_file()
    assert (run_dir / "train" / "model" / "Format-Serving" / "saved_model.pb").is_file()
    # The pixels' scaling learnt by the Transform (0..255 → 1/255), and embedded in the model the Trainer exported.
    graph = json.loads((run_dir / "transform" / "transform_graph" / "analyzers.json").read_text())
    assert graph["scale"] == [1 / 255] and graph["train_examples"] == stats["accepted"]["train"]
    assert (run_dir / "train" / "model" / "assets" / "scaling.keras").is_file()
    # The run prints its table, and the train step its progress.
    assert "evaluate" in result.stdout and "succeeded" in result.stdout
    assert "epoch 1/" in result.stderr


def test_a_second_run_is_fully_cached_and_fast(first_run):
    root, first_dir, first_seconds, _ = first_run
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "kflow.pipeline.cli.main", "run", str(DEMO), "--pipeline-root",
         str(root)],
        capture_output=True, text=True, cwd=REPO, timeout=300,
    )  # fmt: skip
    seconds = time.perf_counter() - started
    assert result.returncode == 0, result.stderr[-3000:]
    record = json.loads((only_run(root) / "run.json").read_text())
    assert {entry["status"] for entry in record["components"].values()} == {"cached"}
    assert {entry["cached_from"] for entry in record["components"].values()} == {first_dir.name}
    assert seconds < 0.25 * first_seconds, (seconds, first_seconds)
    # What makes it fast: a run that only reuses starts no Beam pipeline and loads no TensorFlow.
    lines = result.stderr.splitlines()
    imported = {line.rpartition("|")[2].strip() for line in lines if line.startswith("import time")}
    assert "kflow.pipeline.runners.beam_dag_runner" in imported
    assert not imported & {"apache_beam", "tensorflow", "keras"}, sorted(imported & {"apache_beam", "tensorflow"})


@pytest.mark.slow  # ~20 s; make test keeps a parameter edit rerunning only what depends on it (tests/pipeline/runners).
def test_changing_epochs_reruns_train_and_evaluate_but_not_ingest(first_run, run_kflow):
    root, _, _, _ = first_run
    result = run_kflow("run", DEMO, "--pipeline-root", root, "--set", "trainer.epochs=2")
    assert result.returncode == 0, result.stderr[-3000:]
    record = json.loads((only_run(root) / "run.json").read_text())
    statuses = {node: entry["status"] for node, entry in record["components"].items()}
    assert statuses == {"ingest": "cached", "transform": "cached", "train": "succeeded", "evaluate": "succeeded"}
    assert json.loads((only_run(root) / "train" / "model_run" / "history.json").read_text())["epochs"] == 2


@pytest.mark.slow  # ~15 s; --until is in the docs' kflow plan/run blocks and the images e2e
def test_until_ingest_runs_ingest_only(tmp_path, run_kflow):
    result = run_kflow(
        "run", DEMO, "--pipeline-root", tmp_path, "--until", "ingest", "--set", "data.source.max_records=200"
    )
    assert result.returncode == 0, result.stderr[-3000:]
    record = json.loads((only_run(tmp_path) / "run.json").read_text())
    assert list(record["components"]) == ["ingest"]


@pytest.mark.slow  # tests/reliability covers kill, cancel and resume in make test
def test_killing_a_run_during_training_publishes_nothing_and_the_rerun_reuses_ingest(tmp_path):
    command = [sys.executable, "-m", "kflow.pipeline.cli.main", "run", str(DEMO), "--pipeline-root", str(tmp_path)]
    process = subprocess.Popen(
        [*command, "--set", "trainer.epochs=200"], cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.time() + 300
        while time.time() < deadline:
            runs = list((tmp_path / "demo").glob("*/run.json"))
            components = json.loads(runs[0].read_text())["components"] if runs else {}
            if components.get("train", {}).get("status") == "running" and list(
                (runs[0].parent / ".staging").glob("train-*/model_run/logs")
            ):
                break
            time.sleep(0.2)
        else:
            pytest.fail("training never started")
    finally:
        process.kill()
        process.wait(timeout=60)

    killed = runs[0].parent
    assert (killed / "ingest" / "examples" / "stats.json").is_file()
    assert not (killed / "train").exists(), "a killed Trainer must not publish its model"
    assert list((killed / ".staging").glob("train-*"))

    result = subprocess.run(
        [*command, "--set", "trainer.epochs=2"], cwd=REPO, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr[-3000:]
    record = json.loads((only_run(tmp_path) / "run.json").read_text())
    assert record["components"]["ingest"]["status"] == "cached"
    assert record["components"]["ingest"]["cached_from"] == killed.name
    assert record["components"]["train"]["status"] == "succeeded"
