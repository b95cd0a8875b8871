"""`kflow rehearse CONFIG`: the config compiled and played here, every task in a container of the image."""

import json
import subprocess

import pytest

from kflow.pipeline.rehearsal.podman import LABEL
from tests.conftest import REPO, shared_dataset

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
    assert "every task and every training replica runs in a container of localhost/kflow:local" in done.stderr
    assert done.stdout.splitlines()[-1] == "BLESSED"
    assert "6 tasks (ingest-fingerprint, ingest, transform, train, evaluate-baseline, evaluate)" in done.stdout
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


@pytest.mark.containers
@pytest.mark.real_data
def test_mnist_on_two_mwms_workers_rehearses_to_blessed_each_replica_its_own_container(tmp_path, engine, run_kflow):
    """The issue's command (kept short: one epoch of 150 steps, and a bound that such training meets)."""
    before = rehearsal_containers()
    done = run_kflow(
        "rehearse", REPO / "pipeline" / "configs" / "mnist.yaml", "--root", tmp_path / "r",
        "--set", "trainer.strategy=multi_worker_mirrored", "--set", "trainer.workers=2",
        "--set", f"data.source.path={shared_dataset('mnist')}", "--set", "trainer.epochs=1",
        "--set", "trainer.steps_per_epoch=150", "--set", "trainer.batch_size=64",
        "--set", "evaluator.thresholds.accuracy.lower_bound=0.9",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines()[-1] == "BLESSED"
    assert f"mounted read-only at their own paths: {shared_dataset('mnist')}" in done.stderr
    ran = json.loads((tmp_path / "r" / "containers.json").read_text())
    for record in ran:
        print(record["name"], record["image"], record["user"], record["read_only_root"], record["addresses"])
        assert record["image"] == "localhost/kflow:local" and record["user"] == "10001:10001"
        assert record["read_only_root"] and record["capabilities"] == [] and record["exit_code"] == 0
    replicas = [record for record in ran if "-worker-0-" in record["name"]]
    assert sorted(record["hostname"].rsplit("-", 1)[1] for record in replicas) == ["0", "1"]
    addresses = [address for record in replicas for address in record["addresses"].values()]
    assert len(addresses) == 2 and len(set(addresses)) == 2 and all(addresses)
    tasks = [record["name"].split("-", 2)[2] for record in ran if record not in replicas]
    expected = ["ingest-fingerprint", "ingest", "transform", "train", "evaluate-baseline", "evaluate"]
    assert sorted(tasks) == sorted(expected)
    history = json.loads(next((tmp_path / "r" / "play" / "train").rglob("history.json")).read_text())
    assert history["replicas"] == 2
    assert rehearsal_containers() == before


def test_a_cluster_job_without_containers_is_refused_in_one_line(tmp_path, run_kflow):
    """Its replicas name each other by their JobSet host names: processes of this machine cannot be those hosts."""
    done = run_kflow("rehearse", DEMO, "--root", tmp_path / "r", "--processes",
                     "--set", "trainer.strategy=multi_worker_mirrored", "--set", "trainer.workers=2")  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr
    (line,) = [line for line in done.stderr.splitlines() if line.startswith("kflow rehearse:")]
    assert "train runs as a cluster job, whose replicas need containers (--processes)" in line
    assert not (tmp_path / "r" / "play").exists()
