"""`kflow run` of a config with a `tuner` section: the search runs before the Trainer, the Trainer trains with the
best settings and records them, `kflow show` and `kflow runs` show them; with tracking on, the trials are MLflow
runs nested under the pipeline's run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.e2e.test_mlflow_tracking import mlflow_server  # noqa: F401  (its module's `mlflow server` fixture)

REPO = Path(__file__).resolve().parents[2]
IRIS_CSV = REPO / "pipeline" / "configs" / "data" / "iris.csv"


def write_config(folder: Path, **tuner) -> Path:
    config = {
        "name": "iris-tune",
        "pipeline_root": str(folder / "runs"),
        "data": {"dataset": "csv", "source": {"path": str(IRIS_CSV)}, "label": "species",
                 "split": {"train": 8, "eval": 1, "test": 1}},
        "trainer": {"model": "tabular_mlp", "epochs": 3, "batch_size": 16},
        "evaluator": {"baseline": "none"},
        "tuner": {"search_space": {"trainer.optimizer.learning_rate": {"log_uniform": [1e-3, 3e-2]},
                                   "trainer.batch_size": {"choice": [16, 32]}},
                  "algorithm": "random", "max_trials": 2, "parallel_trials": 2, **tuner},
    }  # fmt: skip
    path = folder / "iris.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def kflow(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "kflow.pipeline.cli.main", *args], capture_output=True, text=True, cwd=REPO, timeout=900
    )


def test_the_trainer_trains_with_the_best_settings_and_show_and_runs_say_them(tmp_path):
    # Short trials (tuner.trial_epochs, KerasTuner's search(epochs=...)), then the Trainer's trainer.epochs.
    done = kflow("run", str(write_config(tmp_path, trial_epochs=1)))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "2 trials (2 at a time) of 1 epoch(s) each (the Trainer then trains 3)" in done.stderr
    (run_dir,) = (path.parent for path in (tmp_path / "runs" / "iris-tune").glob("*/run.json"))
    best = json.loads((run_dir / "tune" / "hyperparameters" / "best.json").read_text())
    trials = json.loads((run_dir / "tune" / "hyperparameters" / "trials.json").read_text())
    assert len(trials) == 2 and best["trial"] in (0, 1)
    assert [len(trial["curve"]) for trial in trials] == [1, 1], trials
    metadata = json.loads((run_dir / "train" / "model" / "metadata.json").read_text())
    assert metadata == {"hyperparameters": best["settings"]}
    # The Trainer's own record: it trained with the best trial's batch size, for trainer.epochs.
    history = json.loads((run_dir / "train" / "model_run" / "history.json").read_text())
    assert history["batch_size"] == best["settings"]["trainer.batch_size"] and history["epochs"] == 3
    rate = best["settings"]["trainer.optimizer.learning_rate"]
    # The Evaluator's report of this run names the tuned settings under "Trained with".
    report = (run_dir / "evaluate" / "evaluation" / "report.html").read_text()
    assert "Tuned: the settings a Tuner chose" in report and "Not tuned" not in report
    assert f"<td>{history['batch_size']}</td>" in report.split("Tuned: the settings a Tuner chose", 1)[1]
    shown = kflow("show", str(run_dir))
    assert shown.returncode == 0, shown.stderr
    batch = best["settings"]["trainer.batch_size"]
    assert f"train trained with the tuned settings: batch_size={batch} learning_rate={rate:.4g}" in shown.stdout
    listed = kflow("runs", str(tmp_path / "runs"))
    assert "tuned settings" in listed.stdout.splitlines()[0]
    assert f"batch_size={batch} learning_rate={rate:.4g}" in listed.stdout
    as_json = json.loads(kflow("runs", str(tmp_path / "runs"), "--json").stdout)
    assert as_json[0]["hyperparameters"] == {"train": best["settings"]}


@pytest.mark.slow  # ~60 s with the MLflow server's start
def test_with_tracking_each_trial_is_an_mlflow_run_nested_under_the_pipelines(tmp_path, mlflow_server):  # noqa: F811
    from mlflow import MlflowClient

    done = kflow("run", str(write_config(tmp_path)), "--set", f"tracking.mlflow={{uri: '{mlflow_server}'}}")
    assert done.returncode == 0, done.stderr[-3000:]
    (run_dir,) = (path.parent for path in (tmp_path / "runs" / "iris-tune").glob("*/run.json"))
    trials = json.loads((run_dir / "tune" / "hyperparameters" / "trials.json").read_text())
    client = MlflowClient(tracking_uri=mlflow_server)
    experiment = client.get_experiment_by_name("iris-tune")
    (parent,) = client.search_runs([experiment.experiment_id], filter_string=f"attributes.run_name = '{run_dir.name}'")
    children = client.search_runs(
        [experiment.experiment_id], filter_string=f"tags.mlflow.parentRunId = '{parent.info.run_id}'"
    )
    assert sorted(child.info.run_name for child in children) == ["tune-trial-0", "tune-trial-1"]
    for child in children:
        trial = trials[int(child.info.run_name.rsplit("-", 1)[1])]
        assert child.data.tags["kflow.trial.state"] == trial["state"]
        assert (
            float(child.data.params["trainer.optimizer.learning_rate"])
            == trial["settings"]["trainer.optimizer.learning_rate"]
        )
        curve = client.get_metric_history(child.info.run_id, "val_loss")
        assert [point.step for point in curve] == [epoch["epoch"] for epoch in trial["curve"]]
    artifacts = [item.path for item in client.list_artifacts(parent.info.run_id, "tune")]
    assert "tune/objective.png" in artifacts and "tune/best.json" in artifacts
