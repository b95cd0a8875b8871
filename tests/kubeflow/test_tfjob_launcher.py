"""The train task's TFJob launcher end to end, against a STAND-IN Kubernetes API that "runs" worker 0."""

import json
import subprocess
import sys

import pytest
from kubernetes import client, config

from kflow.pipeline.kubeflow import tfjob_launcher
from tests.conftest import REPO
from tests.kubeflow.test_tfjob import StandInKubernetes
from tests.pipeline.toy.components import Add


class WorkerRunningStandIn(StandInKubernetes):
    """On create, runs worker 0's command locally (as the operator's pod would) and reports the outcome."""

    def create_namespaced_custom_object(self, group, version, namespace, plural, body):
        name = body["metadata"]["name"]
        worker = body["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["command"]
        pod = f"{name}-worker-0"  # Under multi_worker_mirrored, worker 0 writes the outputs.
        command = [sys.executable if part == "python" else part.replace("$(POD_NAME)", pod) for part in worker]
        result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=120)
        self.states = ["Succeeded" if result.returncode == 0 else "Failed"]
        phase = "Succeeded" if result.returncode == 0 else "Failed"
        self.pod_phases = [{pod: phase, f"{name}-worker-1": phase}]
        self.logs = {pod: result.stderr[-2000:]}
        self.job_name = name
        return super().create_namespaced_custom_object(group, version, namespace, plural, body)

    def list_namespaced_pod(self, namespace, label_selector):
        assert label_selector == f"training.kubeflow.org/job-name={self.job_name}"
        return _pods(self.pod_phases[0])


def _pods(phases):
    from types import SimpleNamespace

    return SimpleNamespace(
        items=[
            SimpleNamespace(metadata=SimpleNamespace(name=n), status=SimpleNamespace(phase=p))
            for n, p in phases.items()
        ]
    )


@pytest.fixture
def stand_in(monkeypatch):
    api = WorkerRunningStandIn([None], [{}])
    monkeypatch.setattr(config, "load_incluster_config", lambda: None)
    monkeypatch.setattr(client, "CustomObjectsApi", lambda: api)
    monkeypatch.setattr(client, "CoreV1Api", lambda: api)
    return api


def launch(tmp_path, add):
    for side in ("left", "right"):
        (tmp_path / side).mkdir()
        (tmp_path / side / "value.txt").write_text("4")
    return tfjob_launcher.main(
        [
            *(
                "--job-prefix=add",
                "--replica=worker=2",
                "--image=img:1",
                "--namespace=team-a",
            ),
            *("--shared-volume-claim=kflow-shared", f"--shared-mount-path={tmp_path / 'shared'}"),
            "--timeout-seconds=120",
            "--",
            *("python", "-m", "kflow.pipeline.runners.kfp_entrypoint", "--component", f"{Add.__module__}:Add"),
            *("--input", f"left={tmp_path / 'left'}", "--input", f"right={tmp_path / 'right'}"),
            *("--output", f"total={tmp_path / 'task-out' / 'total'}", "--parameter", f"add={add}"),
        ]
    )


def test_the_launcher_stages_inputs_runs_the_job_and_copies_the_writers_outputs_back(tmp_path, stand_in):
    assert launch(tmp_path, add=1) == 0
    assert (tmp_path / "task-out" / "total" / "value.txt").read_text() == "9"
    (_, _, namespace, _, manifest) = stand_in.created[0]
    assert namespace == "team-a"
    assert {kind: spec["replicas"] for kind, spec in manifest["spec"]["tfReplicaSpecs"].items()} == {"Worker": 2}
    assert list((tmp_path / "shared").iterdir()) == []  # The job's folder on the shared volume is cleaned up.


def test_a_failing_job_fails_the_task(tmp_path, stand_in, capsys):
    assert launch(tmp_path, add="not-a-number") == 1
    assert "failed" in capsys.readouterr().err
    assert not (tmp_path / "task-out" / "total").exists()
    assert json.dumps(stand_in.created[0][4])  # The manifest was created all the same.
