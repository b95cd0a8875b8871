"""`tracking.mlflow` against a real MLflow tracking server (SQLite backend, artifacts proxied by the server)
started by the test on a free loopback port: the demo's run logged with its params, per-epoch metrics,
evaluation, artifacts and registered model; a cached re-run recorded as cached; a dead server only warns."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import REPO

mlflow = pytest.importorskip("mlflow", reason="MLflow is not installed (pip install 'kflow[mlflow]')")

DEMO = REPO / "pipeline" / "configs" / "demo.yaml"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def mlflow_server(tmp_path_factory):
    """`mlflow server` on 127.0.0.1:<free port>, stopped (its whole process group) after the module."""
    folder = tmp_path_factory.mktemp("mlflow")
    port = free_port()
    command = [str(Path(sys.executable).parent / "mlflow"), "server", "--host", "127.0.0.1", "--port", str(port),
               "--workers", "1", "--backend-store-uri", f"sqlite:///{folder / 'mlflow.db'}",
               "--artifacts-destination", str(folder / "artifacts")]  # fmt: skip
    log = (folder / "server.log").open("w")
    server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    uri = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{uri}/health", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"mlflow server did not start: {(folder / 'server.log').read_text()[-2000:]}")
            time.sleep(0.5)
        yield uri
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
        log.close()


def kflow_run(root: Path, *settings: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "kflow.pipeline.cli.main", "run", str(DEMO), "--pipeline-root", str(root), *settings],
        capture_output=True, text=True, cwd=REPO, timeout=900,
    )  # fmt: skip


@pytest.mark.slow  # ~100 s with the server's start; make test checks the tracking settings compiled into each task
def test_the_demo_is_logged_to_mlflow_and_its_cached_rerun_is_recorded_as_cached(mlflow_server, tmp_path):
    # The demo, shortened to 5 epochs (its bar lowered to match) to keep make test short.
    tracking = ["--set", f"tracking.mlflow={{uri: '{mlflow_server}', experiment: kflow-demo}}", "--set",
                "trainer.epochs=5", "--set", "evaluator.thresholds={accuracy: {lower_bound: 0.5}}"]  # fmt: skip
    first = kflow_run(tmp_path, *tracking)
    assert first.returncode == 0, first.stderr[-3000:]
    second = kflow_run(tmp_path, *tracking)
    assert second.returncode == 0, second.stderr[-3000:]
    assert "kflow: warning: tracking" not in first.stderr + second.stderr

    client = mlflow.MlflowClient(tracking_uri=mlflow_server)
    experiment = client.get_experiment_by_name("kflow-demo")
    runs = client.search_runs([experiment.experiment_id], order_by=["attributes.start_time ASC"])
    assert len(runs) == 2
    cold, cached = runs
    kflow_ids = sorted(path.name for path in (tmp_path / "demo").glob("2*"))
    assert [cold.info.run_name, cached.info.run_name] == kflow_ids
    assert cold.info.status == cached.info.status == "FINISHED"

    # Params: the config, flattened.
    assert cold.data.params["trainer.epochs"] == "5" and cold.data.params["data.dataset"] == "mnist"
    assert cold.data.params["trainer.optimizer.learning_rate"] == "0.002"
    # Per-epoch training metrics with the epoch as step; the evaluation and its verdict.
    losses = client.get_metric_history(cold.info.run_id, "train.loss")
    assert [metric.step for metric in sorted(losses, key=lambda m: m.step)] == list(range(1, 6))
    history = json.loads((tmp_path / "demo" / kflow_ids[0] / "train" / "model_run" / "history.json").read_text())
    assert sorted(losses, key=lambda m: m.step)[-1].value == pytest.approx(history["per_epoch"][-1]["loss"])
    evaluation = json.loads((tmp_path / "demo" / kflow_ids[0] / "evaluate" / "evaluation" / "metrics.json").read_text())
    assert cold.data.metrics["evaluate.accuracy"] == pytest.approx(evaluation["accuracy"])
    assert cold.data.metrics["evaluate.blessed"] == 1.0 and cold.data.metrics["ingest.read"] == 1797
    # Data fingerprints and code versions as tags.
    record = json.loads((tmp_path / "demo" / kflow_ids[0] / "run.json").read_text())
    assert cold.data.tags["kflow.train.code_version"] == record["components"]["train"]["code_version"]
    assert cold.data.tags["kflow.ingest.data_files"] == str(len(record["components"]["ingest"]["data"]["files"]))
    assert cold.data.tags["kflow.cached"] == "none"
    # Artifacts: the report, its plots, the run record and the blessed serving model.
    logged = {item.path for item in client.list_artifacts(cold.info.run_id, "evaluate")}
    assert {"evaluate/report.html", "evaluate/metrics.json", "evaluate/blessing.json", "evaluate/model"} <= logged
    assert any(path.endswith(".png") for path in logged)
    assert "run.json" in {item.path for item in client.list_artifacts(cold.info.run_id)}
    assert "evaluate/model/saved_model.pb" in {
        i.path for i in client.list_artifacts(cold.info.run_id, "evaluate/model")
    }
    # The blessed model, registered once under the pipeline's name.
    (version,) = client.search_model_versions("name = 'demo'")
    assert version.run_id == cold.info.run_id and version.version == "1"
    assert version.tags["kflow_run_id"] == kflow_ids[0]

    # The second run: every component cached, from the first; the same model, not registered again.
    assert cached.data.tags["kflow.cached"] == "all"
    assert cached.data.tags["kflow.train.status"] == "cached"
    assert cached.data.tags["kflow.train.cached_from"] == kflow_ids[0]
    assert cached.data.tags["kflow.evaluate.registered_version"] == "1"
    assert cached.data.metrics["evaluate.accuracy"] == cold.data.metrics["evaluate.accuracy"]

    # A tracking server that is not there: one warning line, the run's own outcome, in bounded time.
    started = time.monotonic()
    dead = kflow_run(
        tmp_path, *tracking[2:], "--set", f"tracking.mlflow={{uri: 'http://127.0.0.1:{free_port()}', timeout: 2}}"
    )
    assert dead.returncode == 0, dead.stderr[-2000:]
    assert "kflow: warning: tracking: MLflow at http://127.0.0.1:" in dead.stderr
    assert time.monotonic() - started < 120


def test_tracking_without_a_uri_is_refused_by_validate(run_kflow):
    done = run_kflow("validate", DEMO, "--set", "tracking.mlflow={experiment: x}")
    assert done.returncode == 2 and "tracking.mlflow" in done.stderr and "uri" in done.stderr


def compile_demo(tmp_path: Path, *settings: str) -> Path:
    output = tmp_path / "pipeline.yaml"
    done = subprocess.run(
        [sys.executable, "-m", "kflow.pipeline.cli.main", "compile", str(DEMO), "-o", str(output), "--image",
         "kflow:test", *settings],
        capture_output=True, text=True, cwd=REPO, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return output


def test_compiled_evaluate_tasks_carry_the_tracking_settings(tmp_path):
    import yaml

    package = compile_demo(tmp_path, "--set", "tracking.mlflow={uri: 'http://mlflow.mlflow:5000'}")
    documents = list(yaml.safe_load_all(package.read_text()))
    executors = documents[0]["deploymentSpec"]["executors"]
    tracked = {name: spec["container"]["args"] for name, spec in executors.items()
               if "--track-mlflow" in spec["container"].get("args", [])}  # fmt: skip
    (args,) = tracked.values()
    settings = json.loads(args[args.index("--track-mlflow") + 1])
    assert settings["uri"] == "http://mlflow.mlflow:5000" and settings["node"] == "evaluate"
    assert settings["producers"]["model_run"] == "train" and settings["pipeline"] == "demo"
    assert settings["config"]["trainer"]["epochs"] == 20
    platform = documents[1]["platforms"]["kubernetes"]["deploymentSpec"]["executors"]
    (evaluate,) = [platform[name] for name in tracked]
    assert {"name": "KFLOW_KFP_RUN_ID", "fieldPath": "metadata.labels['pipeline/runid']"} in evaluate["fieldPathAsEnv"]
    # Without tracking, nothing of it is compiled.
    plain = compile_demo(tmp_path / "plain")
    assert "--track-mlflow" not in plain.read_text() and "KFLOW_KFP_RUN_ID" not in plain.read_text()


@pytest.mark.slow  # Plays the compiled demo (about 80 s); make test checks the compiled arguments above.
def test_the_played_kubeflow_evaluate_task_logs_to_mlflow(mlflow_server, tmp_path):
    from tests.pipeline.compiler.kfp_player import play

    tracking = f"tracking.mlflow={{uri: '{mlflow_server}', experiment: kflow-kfp}}"
    played = play(compile_demo(tmp_path, "--set", tracking), tmp_path / "played", cwd=REPO)
    client = mlflow.MlflowClient(tracking_uri=mlflow_server)
    (run,) = client.search_runs([client.get_experiment_by_name("kflow-kfp").experiment_id])
    evaluation = json.loads((Path(played["evaluate"]["evaluation"].path) / "metrics.json").read_text())
    assert run.data.metrics["evaluate.accuracy"] == pytest.approx(evaluation["accuracy"])
    assert [m.step for m in sorted(client.get_metric_history(run.info.run_id, "train.loss"), key=lambda m: m.step)] == (
        list(range(1, 21))
    )
    assert run.data.params["trainer.epochs"] == "20" and run.data.tags["kflow.evaluate.status"] == "succeeded"
    assert "evaluate/report.html" in {item.path for item in client.list_artifacts(run.info.run_id, "evaluate")}
    blessed = (Path(played["evaluate"]["blessing"].path) / "BLESSED").exists()
    assert run.data.metrics["evaluate.blessed"] == float(blessed)
    mine = [version for version in client.search_model_versions("name = 'demo'") if version.run_id == run.info.run_id]
    assert len(mine) == int(blessed)  # Registered when blessed.


@pytest.mark.parametrize("store", ["folder", "sqlite"])
def test_a_folder_or_a_sqlite_file_is_a_store_and_keeps_the_artifacts_beside_it(store, tmp_path, monkeypatch):
    """The docs' `sqlite:///mlflow.db or a folder`: MLflow 3 refused a folder store unless allowed (a user trial's
    run logged nothing), and put a SQLite store's artifacts in ./mlruns under whatever folder the run started in."""
    from kflow.pipeline import api
    from kflow.pipeline.runners.mlflow_tracking import track_run
    from kflow.pipeline.runners.run_record import Run
    from tests.pipeline.toy.components import Produce

    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    api.run(api.Pipeline("toy", [Produce("produce", parameters={"value": 3})]), tmp_path / "runs")
    (record,) = (tmp_path / "runs" / "toy").glob("*/run.json")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    uri = str(tmp_path / "store") if store == "folder" else f"sqlite:///{tmp_path / 'mlflow.db'}"
    run_id = track_run({"uri": uri}, Run.load(record.parent))
    logged = mlflow.MlflowClient(tracking_uri=uri).get_run(run_id)
    assert logged.data.metrics["produce.value"] == 3 and logged.data.tags["kflow.run_id"] == record.parent.name
    assert not list(elsewhere.iterdir())  # nothing under the folder the run started in
    if store == "sqlite":
        assert logged.info.artifact_uri.startswith((tmp_path / "mlartifacts").as_uri()), logged.info.artifact_uri


def test_a_folder_stores_registry_is_its_own_not_a_database_in_the_current_folder(tmp_path, monkeypatch):
    """A user trial: a run tracked to a folder store left a SQLite mlflow.db (950 KB, a Default experiment) in the
    folder it ran from: registering the blessed model used MLflow 3's default registry, sqlite:///mlflow.db."""
    from kflow.pipeline.runners.mlflow_tracking import track_run
    from kflow.pipeline.runners.run_record import Run
    from tests.e2e.test_evaluator_gate import fake_run

    run_dir = fake_run(tmp_path / "runs" / "iris", "20261202-000000-000000-aaaa", blessed=True, model_fingerprint="m1")
    record = json.loads((run_dir / "run.json").read_text())
    (run_dir / "run.json").write_text(json.dumps({**record, "pipeline": "iris", "status": "succeeded"}))
    serving = run_dir / "train" / "model" / "Format-Serving"
    serving.mkdir()
    (serving / "saved_model.pb").write_bytes(b"a SavedModel's bytes")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    store = str(tmp_path / "store")
    run_id = track_run({"uri": store}, Run.load(run_dir))
    assert not list(elsewhere.iterdir())  # no mlflow.db, no mlruns/
    client = mlflow.MlflowClient(tracking_uri=store, registry_uri=store)
    (version,) = client.search_model_versions("name = 'iris'")
    assert version.run_id == run_id and version.tags["kflow_model_fingerprint"] == "m1"


def test_an_epochs_time_and_speed_are_logged_apart_from_the_trainings(tmp_path):
    """A user trial: the summary's examples_per_second (2,210) was overwritten in MLflow by the epochs' of the same
    key (the last, 13,678); the epochs' now are epoch_examples_per_second and epoch_seconds, the loss one curve."""
    from kflow.pipeline.runners.mlflow_tracking import run_metrics
    from kflow.pipeline.runners.run_record import Run

    run_dir = tmp_path / "20261202-000000-000000-aaaa"
    model_run = run_dir / "train" / "model_run"
    model_run.mkdir(parents=True)
    epochs = [{"epoch": 1, "loss": 0.9, "seconds": 4.1, "examples_per_second": 1175.0},
              {"epoch": 2, "loss": 0.5, "seconds": 0.2, "examples_per_second": 13678.0}]  # fmt: skip
    (model_run / "history.json").write_text(json.dumps({"per_epoch": epochs}))
    summary = {"loss": 0.5, "seconds": 5.5, "examples_per_second": 2210.0}
    train = {
        "status": "succeeded",
        "summary": summary,
        "outputs": {"model_run": {"type": "ModelRun", "uri": str(model_run)}},
    }
    (run_dir / "run.json").write_text(
        json.dumps({"run_id": run_dir.name, "pipeline": "toy", "components": {"train": train}})
    )
    logged = {}
    for key, value, step in run_metrics(Run.load(run_dir)):
        logged.setdefault(key, []).append((step, value))
    assert logged["train.examples_per_second"] == [(0, 2210.0)] and logged["train.seconds"] == [(0, 5.5)]
    assert logged["train.epoch_examples_per_second"] == [(1, 1175.0), (2, 13678.0)]
    assert logged["train.loss"] == [(1, 0.9), (2, 0.5)]  # the summary's loss is the curve's last point
