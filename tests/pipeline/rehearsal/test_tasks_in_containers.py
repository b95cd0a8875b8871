"""Every task of a compiled pipeline a container of the kflow image, as KFP's launcher runs it in a pod."""

import json
from pathlib import Path

import pytest

from kflow.pipeline.rehearsal.kfp_player import ContainerTasks, play
from kflow.pipeline.rehearsal.podman import LOCAL_IMAGE, ContainerSpec
from tests.conftest import REPO

pytestmark = pytest.mark.containers
DEMO = REPO / "pipeline" / "configs" / "demo.yaml"


def test_the_demo_plays_to_a_blessed_model_with_every_task_in_a_restricted_container(tmp_path, engine, run_kflow):
    compiled = run_kflow("compile", DEMO, "-o", tmp_path / "pipeline.yaml", "--image", LOCAL_IMAGE)
    assert compiled.returncode == 0, compiled.stderr[-2000:]
    outputs = play(tmp_path / "pipeline.yaml", tmp_path / "root", cwd=REPO, tasks=ContainerTasks(engine))
    assert (Path(outputs["evaluate"]["blessing"].path) / "BLESSED").exists()
    metrics = json.loads((Path(outputs["evaluate"]["evaluation"].path) / "metrics.json").read_text())
    assert metrics["accuracy"] >= 0.95

    ran = {record.name: record for record in engine.records}
    tasks = ["ingest-fingerprint", "ingest", "transform", "train", "evaluate-baseline", "evaluate"]
    assert sorted(ran) == sorted(f"kflow-{engine.rehearsal}-{task}" for task in tasks)
    for record in engine.records:
        print(record)
        assert record.image == LOCAL_IMAGE and record.user == "10001:10001" and record.exit_code == 0
        assert record.read_only_root and record.capabilities == []
    # The limits of the compiled tasks (kubeflow.resources' defaults: 1 GiB for the small tasks).
    assert ran[f"kflow-{engine.rehearsal}-evaluate-baseline"].memory_bytes == 1073741824
    # What the tasks wrote, uid 10001 wrote: the artifacts and the baselines' store on the volume.
    model = Path(outputs["train"]["model"].path)
    assert (model / "model.keras").stat().st_uid == 10001
    store = tmp_path / "root" / "volumes" / "kflow-shared" / "kflow-baselines" / "demo"
    assert any(path.stat().st_uid == 10001 for path in store.rglob("*"))


def test_inside_a_task_container_the_user_is_10001_the_root_read_only_and_there_is_no_token(engine):
    """What a task finds in its container: uid 10001, nothing writable but /tmp (and its mounts), no token."""
    probe = ContainerSpec(
        image=LOCAL_IMAGE,
        name=f"kflow-{engine.rehearsal}-probe",
        command=["sh", "-c", "id -u; touch /app/x 2>&1 || echo root-read-only; touch /tmp/x && echo tmp-writable; "
                 "ls /var/run/secrets/kubernetes.io 2>&1 || echo no-token"],
    )  # fmt: skip
    done = engine.run(probe, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "10001" and "root-read-only" in lines and "tmp-writable" in lines and "no-token" in lines
