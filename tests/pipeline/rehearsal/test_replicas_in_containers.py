"""Every TrainJob pod a container of the image on a container network, each its own host: the pods the STAND-IN
Trainer v2 / JobSet controllers make from the TrainJob kflow submits, run by podman (pipeline/rehearsal/)."""

import json
import threading
import time
from pathlib import Path

import pytest

from kflow.pipeline.dsl.heartbeat import last_beats
from kflow.pipeline.kubeflow.cluster_job import ClusterJob
from kflow.pipeline.kubeflow.trainjob import render_runtime, render_trainjob
from kflow.pipeline.rehearsal.container_pods import RehearsalCluster
from kflow.pipeline.rehearsal.kfp_player import ContainerTasks, play
from kflow.pipeline.rehearsal.podman import LOCAL_IMAGE
from kflow.pipeline.rehearsal.stand_in_trainer import jobset_pods, jobset_spec
from tests.conftest import REPO, shared_dataset

pytestmark = pytest.mark.containers
MNIST = REPO / "pipeline" / "configs" / "mnist.yaml"
JOB = "train-1a2b3c4d"
PROBE = f"""
echo uid=$(id -u)
touch /probe 2>/dev/null && echo root=writable || echo root=read-only
ls /var/run/secrets/kubernetes.io >/dev/null 2>&1 && echo token=present || echo token=absent
echo host=$(hostname)
getent hosts {JOB}-worker-0-0.{JOB} {JOB}-worker-0-1.{JOB} | sed 's/^/peer=/'
touch /mnt/kflow-shared/$(hostname) && echo shared=writable
"""


def wait_for_end(pods, seconds=180):
    deadline = time.monotonic() + seconds
    while any(pod.exit_code is None for pod in pods):
        assert time.monotonic() < deadline, "the pods did not end"
        time.sleep(0.2)


def test_inside_a_replica_container_the_user_is_10001_the_root_read_only_and_there_is_no_token(engine, tmp_path):
    """Two pods of a TrainJob as the controllers make them from kflow's rendered TrainJob and runtime, running a probe
    through kflow's replica command: each its own host, by its JobSet name, at its own address."""
    job = ClusterJob(name=JOB, namespace="kubeflow", image=LOCAL_IMAGE, entrypoint=["sh", "-c", PROBE],
                     replicas={"worker": 2})  # fmt: skip
    pods = jobset_pods(JOB, "kubeflow", jobset_spec(render_trainjob(job), render_runtime(job)))
    with RehearsalCluster(engine, {"kflow-shared": tmp_path / "shared"}) as cluster:
        running = cluster.start_pods(pods)
        wait_for_end(running)
        said = [dict(line.split("=", 1) for _, line in pod.lines if "=" in line and " " not in line.split("=")[0])
                for pod in running]  # fmt: skip
        logs = ["\n".join(line for _, line in pod.lines) for pod in running]
    for pod, found, log in zip(running, said, logs, strict=True):
        assert pod.exit_code == 0, log
        assert found["uid"] == "10001" and found["root"] == "read-only" and found["token"] == "absent", log
        assert found["host"] == pod.pod.hostname and found["shared"] == "writable", log
    peers = [sorted(line for _, line in pod.lines if line.startswith("peer=")) for pod in running]
    assert peers[0] == peers[1] and len({line.split()[0] for line in peers[0]}) == 2  # two addresses, known to both
    records = {record.name: record for record in engine.records}
    addresses = [records[pod.name].hostname for pod in running]
    assert addresses == [f"{JOB}-worker-0-0", f"{JOB}-worker-0-1"]  # JobSet's host names: <job>-<index>
    assert sorted(path.name for path in (tmp_path / "shared").iterdir()) == addresses  # one named volume, shared


@pytest.mark.real_data
def test_a_killed_worker_container_restarts_the_group_from_its_checkpoint(engine, tmp_path, run_kflow):
    """MNIST compiled for 2 MWMS workers and played with every task and replica in a container; worker 1's container
    is killed past a checkpoint: JobSet's failure policy restarts the group, which resumes from the checkpoint."""
    steps, every, batch = 100, 40, 64
    overrides = [
        f"data.source.path={shared_dataset('mnist')}", "trainer.strategy=multi_worker_mirrored", "trainer.workers=2",
        "trainer.epochs=2", f"trainer.steps_per_epoch={steps}", f"trainer.batch_size={batch}",
        f"trainer.checkpoint_every_steps={every}", "trainer.stall_timeout=60",
        "evaluator.thresholds.accuracy.lower_bound=0.8",
    ]  # fmt: skip
    sets = [part for value in overrides for part in ("--set", value)]
    done = run_kflow("compile", MNIST, "-o", tmp_path / "pipeline.yaml", "--image", LOCAL_IMAGE, *sets)
    assert done.returncode == 0, done.stderr[-2000:]
    volumes = tmp_path / "volumes"
    killed = []
    with RehearsalCluster(engine, {"kflow-shared": volumes / "kflow-shared"}) as cluster:

        def kill_worker_1():
            deadline = time.monotonic() + 600
            while time.monotonic() < deadline and not killed:
                for beats in (volumes / "kflow-shared").glob("*/work/heartbeats"):
                    if last_beats(beats).get("worker-0", {}).get("step", 0) >= 60:
                        (run,) = cluster.server.runs.values()
                        (victim,) = [pod for pod in run.pods if pod.pod.index == 1]
                        engine.call("kill", "--signal", "KILL", victim.name, check=False)
                        killed.append(victim.name)
                time.sleep(0.2)

        threading.Thread(target=kill_worker_1, daemon=True).start()
        tasks = ContainerTasks(engine, [shared_dataset("mnist")], cluster)
        outputs = play(tmp_path / "pipeline.yaml", tmp_path / "root", cwd=REPO, volumes=volumes, tasks=tasks)
        (run,) = cluster.server.runs.values()
        restarts, job_name = run.restarts, run.manifest["metadata"]["name"]
    assert killed, "worker 1 was never killed"
    history = json.loads((Path(outputs["train"]["model_run"].path) / "history.json").read_text())
    assert restarts == 1 and history["replicas"] == 2 and history["final_step"] == 2 * steps
    # Resumed from a checkpoint: one every `every` steps, or the one at an epoch's end (the kill may come after it).
    assert history["start_step"] > 0 and 0 in (history["start_step"] % every, history["start_step"] % steps)
    assert (Path(outputs["evaluate"]["blessing"].path) / "BLESSED").exists()

    # The containers that ran: the tasks, and the replicas of both attempts, each its own host.
    replicas = [record for record in engine.records if "-worker-0-" in record.name]
    tasks_ran = [record for record in engine.records if record not in replicas and not record.name.endswith("-network")]
    for record in engine.records:
        print(f"{record.name}: {record.image} user {record.user} read-only {record.read_only_root} "
              f"caps {record.capabilities} {record.hostname} {record.addresses} exit {record.exit_code}")  # fmt: skip
        assert record.image == LOCAL_IMAGE and record.user == "10001:10001"
        assert record.read_only_root and record.capabilities == []
    assert len(replicas) == 4 and len(tasks_ran) == 6
    killed_record = next(record for record in replicas if record.name == killed[0])
    assert killed_record.exit_code == 137
    names = [f"{job_name}-worker-0-0", f"{job_name}-worker-0-1"]
    assert sorted(record.hostname for record in replicas) == sorted(2 * names)  # a restart keeps the host names
    addresses = [address for record in replicas for address in record.addresses.values()]
    assert len(set(addresses)) == 4, addresses  # every pod its own address; the restarted ones new addresses
