"""Runs started at the same time into one pipeline root: both finish, no execution runs twice at once."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO
from tests.reliability.toy import RUN_TOY

DEMO = REPO / "pipeline" / "configs" / "demo.yaml"


def start(command: list[str]) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def records(root, pipeline: str) -> list[dict]:
    return [json.loads(path.read_text()) for path in sorted((root / pipeline).glob("*/run.json"))]


def test_two_runs_of_one_execution_run_it_once_and_the_second_reuses_it(tmp_path):
    toy = [sys.executable, "-c", RUN_TOY, str(tmp_path), "blob_pipeline", json.dumps({"sleep": 3.0})]
    processes = [start(toy), start(toy)]
    for process in processes:
        _, stderr = process.communicate(timeout=120)
        assert process.returncode == 0, stderr[-2000:]
    first, second = records(tmp_path, "toy")
    statuses = sorted(record["components"]["blob"]["status"] for record in (first, second))
    assert statuses == ["cached", "succeeded"]
    ran, reused = sorted((first, second), key=lambda record: record["components"]["blob"]["status"] == "cached")
    assert reused["components"]["blob"]["cached_from"] == ran["run_id"]
    assert reused["components"]["blob"]["outputs"] == ran["components"]["blob"]["outputs"]


@pytest.mark.slow  # make test keeps the toy case above (one execution, two runs, run once)
def test_two_concurrent_demo_runs_into_one_root_both_succeed(tmp_path):
    command = [sys.executable, "-m", "kflow.pipeline.cli.main", "run", str(DEMO), "--pipeline-root", str(tmp_path)]
    processes = [start([*command, "--set", "trainer.epochs=3"]) for _ in range(2)]
    for process in processes:
        _, stderr = process.communicate(timeout=600)
        assert process.returncode == 0, stderr[-3000:]
    runs = records(tmp_path, "demo")
    assert len(runs) == 2 and runs[0]["run_id"] != runs[1]["run_id"]
    for node in ("ingest", "train", "evaluate"):
        statuses = sorted(run["components"][node]["status"] for run in runs)
        assert statuses == ["cached", "succeeded"], (node, statuses)
        outputs = {json.dumps(run["components"][node]["outputs"], sort_keys=True) for run in runs}
        assert len(outputs) == 1, f"{node}: both runs must point at the one published copy"
    assert all(run["status"] == "succeeded" for run in runs)
    assert not list(tmp_path.glob("demo/*/run.tmp*")), "no torn or leftover record files"
