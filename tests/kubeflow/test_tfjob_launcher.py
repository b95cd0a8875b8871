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


def launch_arguments(tmp_path, add):
    for side in ("left", "right"):
        (tmp_path / side).mkdir(exist_ok=True)
        (tmp_path / side / "value.txt").write_text("4")
    return [
        *("--job-prefix=add", "--replica=worker=2", "--image=img:1", "--namespace=team-a"),
        *("--shared-volume-claim=kflow-shared", f"--shared-mount-path={tmp_path / 'shared'}"),
        "--timeout-seconds=120",
        "--",
        *("python", "-m", "kflow.pipeline.runners.kfp_entrypoint", "--component", f"{Add.__module__}:Add"),
        *("--input", f"left={tmp_path / 'left'}", "--input", f"right={tmp_path / 'right'}"),
        *("--output", f"total={tmp_path / 'task-out' / 'total'}", "--parameter", f"add={add}"),
    ]


def launch(tmp_path, add):
    return tfjob_launcher.main(launch_arguments(tmp_path, add))


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


class NeverFinishingStandIn(StandInKubernetes):
    """A STAND-IN whose job runs forever; `on_poll` runs at each poll (e.g. to SIGTERM the launcher)."""

    def __init__(self, on_poll=None):
        super().__init__([None], [{}])
        self.deleted = []
        self.on_poll = on_poll

    def create_namespaced_custom_object(self, group, version, namespace, plural, body):
        self.job_name = body["metadata"]["name"]
        return super().create_namespaced_custom_object(group, version, namespace, plural, body)

    def get_namespaced_custom_object(self, group, version, namespace, plural, name):
        if self.on_poll:
            self.on_poll(self.polls)
        self.polls += 1
        return {"metadata": {"name": name}, "status": {"conditions": [{"type": "Running", "status": "True"}]}}

    def list_namespaced_pod(self, namespace, label_selector):
        return _pods({f"{self.job_name}-worker-0": "Running"})

    def delete_namespaced_custom_object(self, group, version, namespace, plural, name, **options):
        self.deleted.append((group, version, namespace, plural, name, options))


def use(monkeypatch, api):
    monkeypatch.setattr(config, "load_incluster_config", lambda: None)
    monkeypatch.setattr(client, "CustomObjectsApi", lambda: api)
    monkeypatch.setattr(client, "CoreV1Api", lambda: api)
    return api


def launch_with_timeout(tmp_path, seconds):
    args = launch_arguments(tmp_path, add=1)
    return tfjob_launcher.main([f"--timeout-seconds={seconds}" if a.startswith("--timeout") else a for a in args])


def test_a_timed_out_job_is_deleted(tmp_path, monkeypatch, capsys):
    api = use(monkeypatch, NeverFinishingStandIn())
    assert launch_with_timeout(tmp_path, 0) == 1
    err = capsys.readouterr().err
    assert "did not finish within 0 s" in err and err.rstrip().endswith("; deleting the job")
    assert api.deleted == [
        ("kubeflow.org", "v1", "team-a", "tfjobs", api.job_name, {"propagation_policy": "Background"})
    ]


def test_a_failed_job_is_deleted(tmp_path, stand_in):
    stand_in.deleted = []
    stand_in.delete_namespaced_custom_object = lambda *args, **options: stand_in.deleted.append((args, options))
    assert launch(tmp_path, add="not-a-number") == 1
    (((_, _, namespace, plural, name), _),) = stand_in.deleted
    assert (namespace, plural, name) == ("team-a", "tfjobs", stand_in.job_name)


def test_a_sigterm_deletes_the_job_and_exits_143(tmp_path, monkeypatch, capsys):
    """A KFP cancel SIGTERMs the launcher's pod: a real signal, delivered while it waits."""
    import os
    import signal

    monkeypatch.setattr("kflow.pipeline.kubeflow.tfjob.time.sleep", lambda seconds: None)

    def terminate_on_second_poll(polls):
        if polls == 1:
            os.kill(os.getpid(), signal.SIGTERM)

    api = use(monkeypatch, NeverFinishingStandIn(terminate_on_second_poll))
    before = signal.getsignal(signal.SIGTERM)
    assert launch_with_timeout(tmp_path, 3600) == 143
    assert "terminated by SIGTERM" in capsys.readouterr().err
    assert [entry[4] for entry in api.deleted] == [api.job_name]
    assert signal.getsignal(signal.SIGTERM) is before  # The launcher restores the handler it replaced.


def test_a_finished_job_is_kept_with_its_pods_logs(tmp_path, stand_in):
    stand_in.delete_namespaced_custom_object = lambda *args, **options: pytest.fail("a finished job was deleted")
    assert launch(tmp_path, add=1) == 0
    assert stand_in.created[0][4]["spec"]["runPolicy"]["cleanPodPolicy"] == "Running"
