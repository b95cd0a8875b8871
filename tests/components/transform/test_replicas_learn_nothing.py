"""A 2-worker MultiWorkerMirrored run of the iris config: both replicas read the one TransformGraph and neither
learns anything from the data (every process's tabular reads and adapt calls counted: zero), while the same
config without a transform learns in each replica (the count's control)."""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path

import pytest
import yaml

from tests.components.datasets.tabular_fixtures import write_iris

HOOK = Path(__file__).resolve().parent / "learning_hook"


def learning_calls(tmp_path, run_kflow, *settings) -> tuple[dict[str, list[str]], Path]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    config = {
        "name": "iris",
        "pipeline_root": str(tmp_path / "runs"),
        "data": {"dataset": "csv", "source": {"path": str(write_iris(tmp_path / "iris.csv"))}, "label": "species",
                 "split": {"train": 8, "eval": 1, "test": 1}, "shards_per_split": 1},
        "trainer": {"epochs": 5, "batch_size": 16, "strategy": "multi_worker_mirrored", "workers": 2},
        "evaluator": {"baseline": "none"},
    }  # fmt: skip
    (tmp_path / "iris.yaml").write_text(yaml.safe_dump(config))
    calls = tmp_path / "calls.txt"
    environment = {**os.environ, "KFLOW_LEARNING_CALLS": str(calls),
                   "PYTHONPATH": os.pathsep.join(filter(None, [str(HOOK), os.environ.get("PYTHONPATH")]))}  # fmt: skip
    done = run_kflow("run", tmp_path / "iris.yaml", "--until", "train", *settings, env=environment)
    assert done.returncode == 0, done.stderr[-3000:]
    by_process = defaultdict(list)
    for line in calls.read_text().splitlines():
        pid, what = line.split(" ", 1)
        by_process[pid].append(what)
    (run,) = [path for path in (tmp_path / "runs" / "iris").iterdir() if not path.name.startswith(".")]
    return dict(by_process), run


@pytest.mark.slow  # two 2-worker runs, about 60 s; make test counts the calls of a one-process Trainer
def test_two_mirrored_replicas_read_one_graph_and_learn_nothing(tmp_path, run_kflow):
    by_process, run = learning_calls(tmp_path / "graph", run_kflow)
    history = json.loads((run / "train" / "model_run" / "history.json").read_text())
    assert history["strategy"] == "multi_worker_mirrored" and history["replicas"] == 2
    watched = [pid for pid, calls in by_process.items() if "hooked" in calls]
    assert len(watched) >= 2, by_process  # the two workers, at least, imported the task and were watched
    assert all(calls == ["hooked"] for calls in by_process.values()), by_process
    graph = run / "transform" / "transform_graph"
    assert (run / "train" / "model" / "assets" / "preprocessing.keras").read_bytes() == (
        graph / "preprocessing.keras"
    ).read_bytes()

    # The control: without a transform, each replica reads the training split to learn its preprocessing.
    by_process, _ = learning_calls(tmp_path / "no-graph", run_kflow, "--set", "transform.enabled=false")
    learning = [pid for pid, calls in by_process.items() if "TabularTask._read" in calls]
    assert len(learning) >= 2, by_process
