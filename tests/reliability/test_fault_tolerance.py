"""Fault tolerance by default: losing a worker of a multi-process strategy restarts the cluster from the
last checkpoint (trainer.max_restarts defaults to 2); `max_restarts: 0` fails fast."""

from __future__ import annotations

import json
import signal
import subprocess

import psutil
import pytest

from tests.conftest import REPO
from tests.reliability.toy import descendants, mwms_demo_command, wait_for, wait_for_a_checkpoint


def worker_1(process: subprocess.Popen) -> psutil.Process | None:
    for candidate in descendants(process):
        try:
            if "kflow.components.trainer.worker" in " ".join(candidate.cmdline()) and '"index": 1' in (
                candidate.environ().get("TF_CONFIG", "")
            ):
                return candidate
        except psutil.NoSuchProcess:
            continue
    return None


def run_and_kill_worker_1(root, *settings: str) -> tuple[subprocess.Popen, str]:
    command = mwms_demo_command(root, 6, *settings)
    process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for_a_checkpoint(root)
        wait_for(lambda: worker_1(process), 30, "worker 1").send_signal(signal.SIGKILL)
        _, stderr = process.communicate(timeout=600)
    finally:
        process.kill()
    return process, stderr


@pytest.mark.slow  # ~45 s; make test keeps resuming from a checkpoint (test_distributed.py).
def test_a_killed_worker_is_replaced_from_the_last_checkpoint_with_the_shipped_defaults(tmp_path):
    process, stderr = run_and_kill_worker_1(tmp_path)
    assert process.returncode == 0, stderr[-3000:]
    assert "restarting the cluster from the last checkpoint (1/2)" in stderr
    assert "resumed from step" in stderr
    (run_file,) = tmp_path.glob("demo/*/run.json")
    train = json.loads(run_file.read_text())["components"]["train"]
    history = json.loads((run_file.parent / "train" / "model_run" / "history.json").read_text())
    assert history["restarts"] == 1
    assert train["summary"]["final_step"] == 6 * 43  # Every step of every epoch, once: 1,354 examples / 32.


@pytest.mark.slow
def test_max_restarts_zero_fails_fast(tmp_path):
    process, stderr = run_and_kill_worker_1(tmp_path, "--set", "trainer.max_restarts=0")
    assert process.returncode == 1
    assert "training cluster failed after 0 restart(s)" in stderr
