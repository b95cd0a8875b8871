"""Trial workers: real worker processes run one trial after another; a worker that dies mid-trial fails that
trial only, and a new worker takes the next.

The trainer here is a stand-in (`stand_in_trainer`, named by import path as the Tuner names the Trainer's
executor): it reports epochs as the Trainer does and ends its own process on the search's first call, which a real
training cannot be made to do on cue. Everything around it is real: the tuner's executor, Optuna's journal, the
worker processes and their pipes.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from kflow.pipeline.dsl.artifacts import Examples, HyperParameters, Schema

CRASH_MARKER = "KFLOW_TEST_CRASH_MARKER"


def stand_in_trainer(*, learning_rate: float, epochs: int, working_dir: Path, **_: object) -> None:
    """Says its process, then ends it on the first call of the search (the marker file not yet there); else
    reports `epochs` epochs of val_loss = learning_rate to the trial's pruning."""
    from kflow.components.util.epoch_report import report

    print(f"worker pid {os.getpid()}", flush=True)
    try:  # created atomically: two workers starting at once must not both find it absent (seen under CI's load)
        os.close(os.open(os.environ[CRASH_MARKER], os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        pass
    else:
        os._exit(3)  # as a segfault or an OOM kill would: no result written
    for epoch in range(1, epochs + 1):
        report(epoch, {"loss": learning_rate, "val_loss": learning_rate})


@pytest.mark.slow  # ~17 s; make test runs a tuner's trials in tests/e2e/test_tuner_pipeline.py
def test_workers_run_trials_one_after_another_and_a_dead_one_fails_its_trial_only(tmp_path, monkeypatch):
    from kflow.components.tuner.executor import run

    repo = Path(__file__).resolve().parents[3]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(repo), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    monkeypatch.setenv(CRASH_MARKER, str(tmp_path / "crashed"))
    examples = Examples(tmp_path / "examples")
    (examples.path / "Split-train").mkdir(parents=True)
    output = HyperParameters(tmp_path / "hyperparameters")
    summary = run(
        examples=examples,
        schema=Schema(tmp_path / "schema"),
        hyperparameters=output,
        working_dir=tmp_path / "work",
        search_space={"trainer.optimizer.learning_rate": {"uniform": [0.1, 0.9]}},
        algorithm="random",
        max_trials=6,
        max_time=None,
        objective_metric="val_loss",
        objective_direction=None,
        parallel_trials=2,
        seed=0,
        trainer={"epochs": 2, "learning_rate": 0.5},
        trainer_executor=f"{__name__}:stand_in_trainer",
    )
    trials = json.loads((output.path / "trials.json").read_text())
    states = sorted(trial["state"] for trial in trials)
    assert states == ["completed"] * 5 + ["failed"], trials
    failed = next(trial for trial in trials if trial["state"] == "failed")
    assert failed["error"].startswith("the trial's process exited 3"), failed["error"]
    assert summary["trials_completed"] == 5 and summary["trials_failed"] == 1
    # Six trials in three workers at most: two at the start, one more for the one that died.
    pids = set()
    for trial in trials:
        log = (output.path / "trials" / str(trial["number"]) / "trial.log").read_text()
        pids |= set(re.findall(r"worker pid (\d+)", log))
    assert 2 <= len(pids) <= 3, pids
    best = min(trial["value"] for trial in trials if trial["state"] == "completed")
    assert summary["best_value"] == best
    assert json.loads((output.path / "best.json").read_text())["trial"] == summary["best_trial"]
