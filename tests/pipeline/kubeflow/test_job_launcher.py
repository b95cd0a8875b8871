"""The train task's job launcher end to end, against a STAND-IN Kubernetes API server and Trainer/JobSet controllers.

The stand-in (tests/pipeline/kubeflow/stand_in_kube.py) serves real HTTP to the real `kubernetes` client and runs
every pod of the job as a local process: kflow's replica command, the entrypoint and a toy component.
"""

import json
import os
import re
import signal
import subprocess
import sys

import pytest
from google.protobuf import json_format
from kfp.pipeline_spec import pipeline_spec_pb2

from kflow.pipeline.kubeflow import job_launcher
from tests.conftest import REPO
from tests.pipeline.kubeflow.stand_in_kube import StandInKubernetes

POD_ENV = {"KFLOW_POD_NAME": "run-1-train-launcher", "KFLOW_POD_UID": "0d5c1e7e-1111-4a2b-9c3d-123456789abc"}


@pytest.fixture
def cluster(tmp_path, monkeypatch):
    with StandInKubernetes() as server:
        monkeypatch.setenv("KUBECONFIG", str(server.kubeconfig(tmp_path / "kubeconfig")))
        monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
        for name, value in {**POD_ENV, "KFLOW_POD_NAMESPACE": "team-a"}.items():
            monkeypatch.setenv(name, value)
        yield server


def arguments(
    tmp_path,
    *options,
    add=1,
    sleep=0.0,
    fail="",
    stall="",
    link_to="",
    replicas=("worker=2",),
    backend="trainjob",
    timeout=300,  # a job that never ends fails its test in minutes, not a day (None: the launcher's default)
):
    (tmp_path / "left").mkdir(exist_ok=True)
    (tmp_path / "left" / "value.txt").write_text("4")
    return [
        "--job-prefix=train",
        *(f"--replica={replica}" for replica in replicas),
        "--image=registry.example/kflow:1",
        "--namespace=kubeflow",
        "--shared-volume-claim=kflow-shared",
        f"--shared-mount-path={tmp_path / 'shared'}",
        f"--backend={backend}",
        "--poll-seconds=0.2",
        *([f"--timeout-seconds={timeout}"] if timeout else []),
        *options,
        "--",
        *(
            "python",
            "-m",
            "kflow.pipeline.runners.kfp_entrypoint",
            "--component",
            "tests.pipeline.kubeflow.toy:SumAndSign",
        ),
        *("--input", f"left={tmp_path / 'left'}", "--output", f"total={tmp_path / 'task-out' / 'total'}"),
        *("--parameter", f"add={add}", "--parameter", f"sleep={sleep}", "--parameter", f"fail_on_first_attempt={fail}"),
        *("--parameter", f"stall={stall}", "--parameter", f"link_to={link_to}"),
    ]


def shared_is_empty(tmp_path) -> bool:
    return not (tmp_path / "shared").exists() or list((tmp_path / "shared").iterdir()) == []


@pytest.mark.parametrize("backend", ["trainjob", "tfjob"])
def test_the_job_runs_every_replica_and_its_writers_outputs_come_back(tmp_path, cluster, capfd, backend):
    assert job_launcher.main(arguments(tmp_path, backend=backend, timeout=None)) == 0
    total = tmp_path / "task-out" / "total"
    assert (total / "value.txt").read_text() == "5"
    assert (total / "replica.txt").read_text() == "worker-0 attempt 0"  # worker 0 writes under MWMS
    assert shared_is_empty(tmp_path)  # the job's folder on the shared volume is removed
    err = capfd.readouterr().err
    assert "[worker-0] summing as worker-0" in err and "[worker-1] summing as worker-1" in err
    (job,) = cluster.created("trainjobs" if backend == "trainjob" else "tfjobs")
    # Owned by the launcher's pod (Kubernetes removes it however the task ends), bounded in time.
    assert job["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Pod", "name": POD_ENV["KFLOW_POD_NAME"], "uid": POD_ENV["KFLOW_POD_UID"]}
    ]
    assert job["metadata"]["namespace"] == "team-a"  # the launcher pod's own namespace, where it may own things
    deadline = (
        job["spec"]["activeDeadlineSeconds"]
        if backend == "trainjob"
        else job["spec"]["runPolicy"]["activeDeadlineSeconds"]
    )
    assert deadline == 86400  # the launcher's default
    (policy,) = cluster.created("networkpolicies")
    assert policy["metadata"]["ownerReferences"][0]["name"] == job["metadata"]["name"]
    assert cluster.deleted() == []  # a finished job is kept, with its pods' logs
    if backend == "trainjob":
        (runtime,) = cluster.created("trainingruntimes")  # missing, so the launcher created it
        assert job["spec"]["runtimeRef"]["name"] == runtime["metadata"]["name"]


def test_an_existing_runtime_is_used_as_it_is(tmp_path, cluster):
    assert job_launcher.main(arguments(tmp_path)) == 0
    assert job_launcher.main(arguments(tmp_path, add=2)) == 0  # the same config: the runtime exists now
    assert len(cluster.created("trainingruntimes")) == 1 and len(cluster.created("trainjobs")) == 2


def test_a_pod_that_ends_as_it_is_stopped_is_stopped_without_an_error():
    """The race a stop meets: the pod's process ends after `poll` saw it running, and its reader reaps it before the
    signal. Played here by a poll that answers "running" for an ended, reaped process."""
    from kflow.pipeline.rehearsal.local_pod import LocalPod
    from kflow.pipeline.rehearsal.stand_in_trainer import Pod

    spec = {"containers": [{"command": [sys.executable, "-c", "pass"]}]}
    pod = Pod("p-0", "team-a", "p-0", "train", "worker", 0, {}, {}, spec)
    local = LocalPod(pod)
    local.reader.join(timeout=60)
    assert local.exit_code == 0 and local.phase == "Succeeded"
    local.process.poll = lambda: None  # what poll said a moment before the process ended
    local.stop()  # was: ProcessLookupError, in the stand-in's controller thread, which then never ended the job
    assert local.phase == "Failed"  # deleted while running, as the kubelet reports such a pod


def test_a_job_its_controller_fails_on_ends_failed_at_once_not_at_its_deadline(tmp_path, cluster, capfd):
    def broken(pods):
        raise RuntimeError("no node can run these pods")

    cluster.start_pods = broken
    assert job_launcher.main(arguments(tmp_path)) == 1
    (line,) = [line for line in capfd.readouterr().err.splitlines() if line.startswith("job_launcher:")]
    assert "StandInError" in line and "no node can run these pods" in line, line


def test_passing_api_errors_are_retried_not_fatal(tmp_path, cluster, caplog):
    cluster.fail_next("GET", r"/trainjobs/", 503)
    cluster.fail_next("POST", r"/trainjobs$", 429)
    cluster.fail_next("GET", r"/pods$", 0, times=4)  # dropped connections: more than the client's own 3 retries
    assert job_launcher.main(arguments(tmp_path)) == 0
    retried = [r.getMessage() for r in caplog.records if r.name == "kflow" and "retrying in" in r.getMessage()]
    assert len(retried) == 3
    assert retried[0].startswith("creating TrainJob team-a/train-") and "429 Too Many Requests" in retried[0]
    assert retried[1].startswith("reading trainjobs team-a/train-") and "503 Service Unavailable" in retried[1]
    assert retried[2].startswith("listing the pods jobset.sigs.k8s.io/jobset-name=train-")
    assert cluster.deleted() == [] and (tmp_path / "task-out" / "total" / "value.txt").read_text() == "5"


def test_a_failed_job_fails_the_task_in_one_line_and_is_deleted(tmp_path, cluster, capfd):
    assert job_launcher.main(arguments(tmp_path, fail="worker-1")) == 1
    err = capfd.readouterr().err
    (line,) = [line for line in err.splitlines() if line.startswith("job_launcher:")]
    assert "failed: FailedJobs" in line and "worker-1 (" in line and line.endswith("; deleting the job")
    (job,) = cluster.created("trainjobs")
    assert cluster.deleted() == [
        f"/apis/trainer.kubeflow.org/v1alpha1/namespaces/team-a/trainjobs/{job['metadata']['name']}"
    ]
    assert shared_is_empty(tmp_path) and not (tmp_path / "task-out" / "total").exists()


def test_a_replica_that_stalls_ends_itself_and_the_failure_line_says_so(tmp_path, cluster, capfd):
    """A pod's own watchdog (pipeline/dsl/heartbeat.py) ends a replica that stopped finishing steps; the launcher
    quotes the report it left on the shared volume."""
    assert job_launcher.main(arguments(tmp_path, fail="", stall="worker-1")) == 1
    (line,) = [line for line in capfd.readouterr().err.splitlines() if line.startswith("job_launcher:")]
    assert "worker-1 (" in line and "exit 75" in line
    assert "stalled: worker-1 finished no training step for 2 s; last steps: worker-1 at step 3" in line


def test_max_restarts_restart_the_group_which_then_finishes(tmp_path, cluster, capfd):
    assert job_launcher.main(arguments(tmp_path, "--max-restarts=1", fail="worker-1")) == 0
    assert (tmp_path / "task-out" / "total" / "replica.txt").read_text() == "worker-0 attempt 1"
    (run,) = cluster.runs.values()
    assert run.restarts == 1  # worker-1 failed once, the whole group was made again
    # The first attempt's pods are deleted with it, possibly before their logs were read; the second's are shown.
    assert "[worker-1] kflow replica worker-1 (trainjob, restart attempt 1)" in capfd.readouterr().err


def test_a_job_past_its_deadline_fails_and_is_deleted(tmp_path, cluster, capfd):
    assert job_launcher.main(arguments(tmp_path, "--timeout-seconds=2", sleep=60)) == 1
    assert "DeadlineExceeded" in capfd.readouterr().err
    assert len(cluster.deleted()) == 1 and shared_is_empty(tmp_path)


def test_a_runtime_the_launcher_may_not_create_is_one_line_naming_the_fix(tmp_path, cluster, capfd):
    cluster.fail_next("POST", r"/trainingruntimes$", 403)
    assert job_launcher.main(arguments(tmp_path)) == 1
    (line,) = [line for line in capfd.readouterr().err.splitlines() if line.startswith("job_launcher:")]
    assert "creating TrainingRuntime" in line and "403" in line and "kflow manifests" in line
    assert cluster.created("trainjobs") == [] and cluster.deleted() == [] and shared_is_empty(tmp_path)


def test_sigterm_deletes_the_job_and_exits_143(tmp_path, cluster):
    """A KFP cancel SIGTERMs the launcher's pod: a real signal to a real launcher process."""
    environment = {**os.environ, "PYTHONUNBUFFERED": "1"}
    launcher = subprocess.Popen(
        [sys.executable, "-m", "kflow.pipeline.kubeflow.job_launcher", *arguments(tmp_path, sleep=120)],
        cwd=REPO,
        env=environment,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        cluster.wait_for(lambda: any(p.phase == "Running" and p.lines for r in cluster.runs.values() for p in r.pods))
        launcher.send_signal(signal.SIGTERM)
        _, err = launcher.communicate(timeout=60)
    finally:
        launcher.kill()
    assert launcher.returncode == 143
    assert "terminated by SIGTERM" in err
    assert len(cluster.deleted()) == 1
    cluster.wait_for(lambda: all(p.phase != "Running" for r in cluster.runs.values() for p in r.pods))
    assert shared_is_empty(tmp_path)


def used_permissions(requests) -> set[tuple[str, str, str]]:
    """(API group, resource, verb) of every call the stand-in API server received, as RBAC names them."""
    used = set()
    for method, path, _ in requests:
        if match := re.match(r"^/api/v1/namespaces/[^/]+/pods(/[^/]+/log)?$", path):
            used.add(("", "pods/log" if match[1] else "pods", "get" if match[1] else "list"))
            continue
        group, _, _, _, resource, *name = path.removeprefix("/apis/").split("/")
        verb = {"POST": "create", "DELETE": "delete", "GET": "get" if name else "list"}[method]
        used.add((group, resource, verb))
    return used


@pytest.mark.parametrize("backend", ["trainjob", "tfjob"])
def test_the_launcher_calls_exactly_what_its_rbac_role_grants(tmp_path, cluster, backend):
    assert job_launcher.main(arguments(tmp_path, fail="worker-1", backend=backend)) == 1  # every call, delete too
    granted = {
        (group, resource, verb)
        for rule in job_launcher.launcher_rules(backend)
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
    used = used_permissions(cluster.requests)
    if backend == "tfjob":  # the role covers both Training Operator kinds; a TensorFlow job uses TFJobs
        granted = {permission for permission in granted if permission[1] != "jaxjobs"}
    assert used == granted


def test_a_sigterm_during_a_kubernetes_call_is_a_cancel_not_an_api_error():
    """The SIGTERM handler raises in whatever the launcher is doing, most often a Kubernetes call, whose retry wrapper
    turns every client error into a KubeApiError: the cancel must pass through it (exit 143, not 1)."""
    from kflow.pipeline.kubeflow.kube_api import KubeApi

    def interrupted_call():
        raise job_launcher.Terminated()

    api = KubeApi(custom=None, core=None, networking=None)
    with pytest.raises(job_launcher.Terminated):
        api.call("reading TrainJob kubeflow/x", interrupted_call)


def files_holding(root, text: str) -> list[str]:
    return [str(path) for path in root.rglob("*") if path.is_file() and text.encode() in path.read_bytes()]


def launcher_lines(capfd) -> list[str]:
    return [line for line in capfd.readouterr().err.splitlines() if line.startswith("job_launcher:")]


def test_a_link_among_a_replicas_outputs_is_refused_not_followed(tmp_path, cluster, capfd):
    """A replica writes `token.txt -> <a file only the launcher's pod has>`: the launcher must not copy that file
    into the task's outputs (KFP would upload it); it fails in one line naming the link."""
    token = tmp_path / "launcher-only" / "token"
    token.parent.mkdir()
    token.write_text("LAUNCHER-TOKEN-5b1e")
    assert job_launcher.main(arguments(tmp_path, link_to=str(token))) == 1
    (line,) = launcher_lines(capfd)
    assert "token.txt is a symbolic link" in line and "worker-0's output total" in line
    assert files_holding(tmp_path / "task-out", "LAUNCHER-TOKEN-5b1e") == []
    assert not (tmp_path / "task-out" / "total" / "token.txt").exists()
    assert shared_is_empty(tmp_path)


def test_a_link_in_an_input_is_refused_before_any_job(tmp_path, cluster, capfd):
    token = tmp_path / "launcher-only" / "token"
    token.parent.mkdir()
    token.write_text("LAUNCHER-TOKEN-5b1e")
    argv = arguments(tmp_path)
    (tmp_path / "left" / "token.txt").symlink_to(token)
    assert job_launcher.main(argv) == 1
    (line,) = launcher_lines(capfd)
    assert f"input left: {tmp_path / 'left' / 'token.txt'} is a symbolic link" in line
    assert cluster.created("trainjobs") == [] and shared_is_empty(tmp_path)


def test_a_fifo_in_an_input_is_refused_at_once(tmp_path, cluster, capfd):
    argv = arguments(tmp_path)
    os.mkfifo(tmp_path / "left" / "pipe")
    assert job_launcher.main(argv) == 1
    (line,) = launcher_lines(capfd)
    assert "pipe is not a regular file or folder" in line


def test_a_lost_reply_to_the_create_adopts_the_job_it_made(tmp_path, cluster):
    """The create is done but its answer is lost; the retried create meets 409: the job carries this launch's id,
    so the launcher follows it as its own (its NetworkPolicy, its outputs) and, when it fails, deletes it."""
    cluster.lose_next_reply("POST", r"/trainjobs$")
    assert job_launcher.main(arguments(tmp_path)) == 0
    posts = cluster.created("trainjobs")
    assert len(posts) == 2 and len(cluster.runs) == 1  # the retry met the job the first try made
    (policy,) = cluster.created("networkpolicies")
    assert policy["metadata"]["ownerReferences"][0]["name"] == posts[0]["metadata"]["name"]
    assert (tmp_path / "task-out" / "total" / "value.txt").read_text() == "5"

    cluster.lose_next_reply("POST", r"/trainjobs$")
    assert job_launcher.main(arguments(tmp_path, fail="worker-1")) == 1
    assert len(cluster.deleted()) == 1  # the adopted job is deleted on failure, as one created outright


def test_a_job_of_the_same_name_made_by_someone_else_is_not_adopted(tmp_path, cluster, capfd, monkeypatch):
    """409 for a job that does not carry this launch's id: one line, and the other job is neither followed nor
    deleted."""
    token_hex = job_launcher.secrets.token_hex
    # The same job name each launch (its 4-byte token), a new launch id (16 bytes) each time.
    monkeypatch.setattr(job_launcher.secrets, "token_hex", lambda n: "0" * 8 if n == 4 else token_hex(n))
    assert job_launcher.main(arguments(tmp_path)) == 0
    capfd.readouterr()
    assert job_launcher.main(arguments(tmp_path)) == 1
    (line,) = launcher_lines(capfd)
    assert "already exists and was not created by this launcher" in line
    assert cluster.deleted() == [] and len(cluster.created("networkpolicies")) == 1


def test_the_launcher_writes_the_tasks_executor_output_which_the_replicas_do_not_get(tmp_path, cluster):
    """KFP takes the train task's output artifacts from its executor output: the launcher's pod writes it, after the
    writer's outputs came back; the replicas' command has no executor input (its file is the launcher's)."""
    output_file = tmp_path / "kfp" / "outputs" / "output_metadata.json"
    uri = f"minio://bucket/run/train/total-{tmp_path.name}"
    total = {"name": "total", "type": {"schemaTitle": "system.Artifact"}, "uri": uri}
    executor_input = {"outputs": {"artifacts": {"total": {"artifacts": [total]}}, "outputFile": str(output_file)}}
    assert job_launcher.main([*arguments(tmp_path), "--executor-input", json.dumps(executor_input)]) == 0
    (job,) = cluster.created("trainjobs")
    assert "--executor-input" not in json.dumps(job)
    message = json_format.Parse(output_file.read_text(), pipeline_spec_pb2.ExecutorOutput())
    (artifact,) = message.artifacts["total"].artifacts
    assert (artifact.name, artifact.uri) == ("total", uri)
    assert (tmp_path / "task-out" / "total" / "value.txt").read_text() == "5"
