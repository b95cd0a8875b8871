"""`kflow rehearse CONFIG`: the config compiled and played here, every task in a container of the image."""

import subprocess

import pytest

from kflow.pipeline.rehearsal.podman import LABEL
from tests.conftest import REPO

DEMO = REPO / "pipeline" / "configs" / "demo.yaml"


def rehearsal_containers() -> list[str]:
    listed = subprocess.run(
        ["podman", "ps", "--all", "--filter", f"label={LABEL}", "--format", "{{.Names}}"],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    return listed.stdout.split()


@pytest.mark.containers
def test_the_demo_rehearses_to_blessed_in_containers_and_leaves_none(tmp_path, engine, run_kflow):
    before = rehearsal_containers()
    done = run_kflow("rehearse", DEMO, "--root", tmp_path / "rehearsal")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "every task runs in a container of localhost/kflow:local" in done.stderr
    assert done.stdout.splitlines()[-1] == "BLESSED"
    assert "5 tasks (ingest-fingerprint, ingest, train, evaluate-baseline, evaluate)" in done.stdout
    assert (tmp_path / "rehearsal" / "pipeline.yaml").is_file()
    (blessed,) = (tmp_path / "rehearsal" / "play" / "evaluate").rglob("BLESSED")
    assert blessed.stat().st_uid == 10001  # the evaluate container wrote it
    assert rehearsal_containers() == before


@pytest.mark.slow  # ~40 s: the demo's tasks as processes
def test_without_the_image_every_task_runs_as_a_process_said_in_one_line(tmp_path, run_kflow):
    done = run_kflow("rehearse", DEMO, "--root", tmp_path / "r", "--image", "localhost/kflow:absent")
    assert done.returncode == 0, done.stderr[-3000:]
    (line,) = [line for line in done.stderr.splitlines() if line.startswith("kflow rehearse:")]
    assert "every task runs as a process here" in line and "localhost/kflow:absent" in line
    assert done.stdout.splitlines()[-1] == "BLESSED"


def test_a_bad_config_is_refused_before_anything_runs(tmp_path, run_kflow):
    done = run_kflow("rehearse", DEMO, "--root", tmp_path / "r", "--set", "trainer.epochs=0")
    assert done.returncode == 2
    assert "trainer.epochs" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "r" / "play").exists()
