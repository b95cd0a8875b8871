"""SIGINT and SIGTERM cancel a run: every process it started stops, nothing staged is left, the run
is recorded as cancelled, the exit code says which signal, and a re-run resumes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.conftest import REPO
from tests.reliability.toy import RUN_TOY, descendants, mwms_demo_command, wait_for, wait_for_a_checkpoint

DEMO = REPO / "pipeline" / "configs" / "demo.yaml"


@pytest.mark.parametrize(("signum", "exit_code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_stops_the_run_and_the_processes_its_executor_started(tmp_path, signum, exit_code):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    process = subprocess.Popen(
        [sys.executable, "-c", RUN_TOY, str(tmp_path), "child_process_pipeline"], cwd=REPO, env=env
    )
    try:
        child_pid = int(wait_for(lambda: _read(tmp_path / "toy"), 60, "the executor's child process"))
        started = time.monotonic()
        process.send_signal(signum)
        assert process.wait(timeout=10) == exit_code
        assert time.monotonic() - started < 10
    finally:
        process.kill()
    assert not psutil.pid_exists(child_pid) or psutil.Process(child_pid).status() == psutil.STATUS_ZOMBIE
    (run_file,) = tmp_path.glob("toy/*/run.json")
    record = json.loads(run_file.read_text())
    assert record["status"] == "cancelled"
    assert record["components"]["child"]["status"] == "cancelled"
    assert not list((run_file.parent / ".staging").glob("*")), "the staging folder is removed"
    assert not (run_file.parent / "child").exists()


def _read(pipeline_dir: Path) -> str | None:
    found = list(pipeline_dir.glob("*/child.pid"))
    return found[0].read_text() if found else None


@pytest.mark.slow
def test_ctrl_c_during_distributed_training_cancels_and_the_rerun_resumes(tmp_path):
    """The real thing: `kflow run` of the demo on a 2-worker MultiWorkerMirroredStrategy cluster."""
    command = mwms_demo_command(tmp_path, 12)
    process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for_a_checkpoint(tmp_path)
        workers = [p for p in descendants(process) if "kflow.components.trainer.worker" in " ".join(p.cmdline())]
        assert len(workers) == 2
        started = time.monotonic()
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=10)
        seconds = time.monotonic() - started
    finally:
        process.kill()
    assert process.returncode == 130, stderr[-3000:]
    assert seconds < 10
    assert not [worker for worker in workers if worker.is_running() and worker.status() != psutil.STATUS_ZOMBIE]
    kflow_lines = [line for line in stderr.splitlines() if line.startswith("kflow:")]
    assert kflow_lines == ["kflow: cancelled by SIGINT; finished components are kept for the next run"]
    (run_file,) = tmp_path.glob("demo/*/run.json")
    record = json.loads(run_file.read_text())
    assert (record["status"], record["components"]["train"]["status"]) == ("cancelled", "cancelled")
    assert record["components"]["ingest"]["status"] == "succeeded"
    assert not list((run_file.parent / ".staging").glob("*"))

    rerun = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert "resumed from step" in rerun.stderr
    newest = json.loads(sorted(tmp_path.glob("demo/*/run.json"))[-1].read_text())
    assert newest["components"]["ingest"]["status"] == "cached"
    assert newest["components"]["train"]["summary"]["start_step"] > 0
    assert "loss" in newest["components"]["train"]["summary"]  # the last epoch's, trained before the Ctrl-C or after
