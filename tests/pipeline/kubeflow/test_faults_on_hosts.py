"""Faults on a cluster of real hosts: a replica killed, cut off the network or stopped; the parameter server or the
chief killed. Each run ends in a finished model (the group restarts from its last checkpoint, every step counted
once) within a bounded time, measured and printed.

The hosts and the stand-in controllers are those of test_cluster_on_hosts.py: one network namespace per pod, the
real launcher, replica command and Trainer; JobSet's `failurePolicy` (restart the whole group, same host names,
new addresses) is played by the stand-in.
"""

import json
import os
import signal
import threading
import time

import pytest

from kflow.pipeline.dsl.heartbeat import last_beats
from tests.pipeline.kubeflow.hosts import train_on_hosts as train

pytestmark = pytest.mark.distributed

STEPS, EVERY, BATCH = 100, 40, 64  # per epoch; a checkpoint every 40 steps; global batch
MWMS = ("multi_worker_mirrored", ("worker=2",), ["strategy=multi_worker_mirrored", "workers=2"], "worker-0")
PS = (
    "parameter_server",
    ("chief=1", "worker=2", "ps=1"),
    ["strategy=parameter_server", "workers=2", "parameter_servers=1"],
    "chief-0",
)


def kill(running, network):
    os.killpg(running.process.pid, signal.SIGKILL)


def cut(running, network):
    network.cut(running.host)


def stop(running, network):
    os.killpg(running.process.pid, signal.SIGSTOP)


def replica(running) -> str:
    role = running.pod.replicated_job
    return f"{'worker' if role == 'node' else role}-{running.pod.index}"


def run_with_fault(tmp_path, mnist, cluster, layout, victim, fault, after_step=60):
    """Trains 2 epochs of 100 steps; once the writer finished `after_step` steps (past a checkpoint), applies `fault`
    to the victim's pod. Returns (exit code, history, seconds from the fault to the end, restarts)."""
    examples, schema = mnist
    _, replicas, parameters, writer = layout
    faulted = []

    def inject():
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not faulted:
            for beats in (tmp_path / "shared").glob("*/work/heartbeats"):
                if last_beats(beats).get(writer, {}).get("step", 0) >= after_step:
                    (run,) = cluster.runs.values()
                    (target,) = [p for p in run.pods if replica(p) == victim]
                    fault(target, cluster.network)
                    faulted.append(time.monotonic())
            time.sleep(0.1)

    threading.Thread(target=inject, daemon=True).start()
    code, out = train(
        tmp_path, examples, schema, *parameters,
        "epochs=2", f"steps_per_epoch={STEPS}", f"batch_size={BATCH}", f"checkpoint_every_steps={EVERY}",
        "stall_timeout=60", replicas=replicas, options=["--max-restarts=2"],  # as trainer.max_restarts compiles
    )  # fmt: skip
    assert faulted, "the fault was never applied"
    seconds = time.monotonic() - faulted[0]
    (run,) = cluster.runs.values()
    history = json.loads((out / "model_run" / "history.json").read_text()) if code == 0 else {}
    return code, history, seconds, run.restarts


def check_recovered(name, code, history, seconds, restarts, capfd):
    err = capfd.readouterr().err
    assert code == 0, err[-4000:]
    print(
        f"{name}: finished {seconds:.1f} s after the fault, {restarts} restart(s), resumed at step "
        f"{history['start_step']}, eval accuracy {history['per_epoch'][-1]['val_accuracy']:.4f}"
    )
    assert restarts >= 1 and history["final_step"] == 2 * STEPS
    # Every step counted once: the last attempt trained from its checkpoint to the end, no more. A checkpoint is
    # written every EVERY steps and at each epoch's end (a fault that lands after step 100 resumes from there).
    assert history["start_step"] > 0 and (history["start_step"] % EVERY == 0 or history["start_step"] % STEPS == 0)
    assert history["examples_trained"] == (2 * STEPS - history["start_step"]) * BATCH


# make test-all only (23 s): CI's container tests kill a worker replica's container mid-training and see the group
# resume from its checkpoint (tests/pipeline/rehearsal/test_replicas_in_containers.py), the same recovery.
@pytest.mark.slow
def test_a_killed_worker_host_restarts_the_group_from_its_checkpoint(tmp_path, mnist_ingested, cluster_on_hosts, capfd):
    result = run_with_fault(tmp_path, mnist_ingested, cluster_on_hosts, MWMS, "worker-1", kill)
    check_recovered("MWMS, worker-1 killed", *result, capfd)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "layout", "victim", "fault"),
    [
        ("MWMS, worker-1 cut off the network", MWMS, "worker-1", cut),
        ("MWMS, worker-1 stopped (SIGSTOP)", MWMS, "worker-1", stop),
        ("PS, the parameter server killed", PS, "ps-0", kill),
        ("PS, the chief killed", PS, "chief-0", kill),
    ],
    ids=["cut", "stopped", "ps-killed", "chief-killed"],
)
def test_other_faults_end_in_a_finished_model(
    name, layout, victim, fault, tmp_path, mnist_ingested, cluster_on_hosts, capfd
):
    check_recovered(name, *run_with_fault(tmp_path, mnist_ingested, cluster_on_hosts, layout, victim, fault), capfd)


@pytest.mark.slow
def test_with_no_restart_left_the_job_fails_in_one_line_naming_the_killed_replica(
    tmp_path, mnist_ingested, cluster_on_hosts, capfd
):
    examples, schema = mnist_ingested
    started = time.monotonic()

    def kill_worker_1():
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            for beats in (tmp_path / "shared").glob("*/work/heartbeats"):
                if last_beats(beats).get("worker-0", {}).get("step", 0) >= 20:
                    (run,) = cluster_on_hosts.runs.values()
                    (target,) = [p for p in run.pods if replica(p) == "worker-1"]
                    kill(target, cluster_on_hosts.network)
                    return
            time.sleep(0.1)

    threading.Thread(target=kill_worker_1, daemon=True).start()
    code, _ = train(
        tmp_path, examples, schema, *MWMS[2], "epochs=2", f"steps_per_epoch={STEPS}", f"batch_size={BATCH}",
        options=["--max-restarts=0"],
    )  # fmt: skip
    (line,) = [line for line in capfd.readouterr().err.splitlines() if line.startswith("job_launcher:")]
    print(f"no restart left: failed {time.monotonic() - started:.1f} s after the start: {line}")
    assert code == 1 and "failed: FailedJobs" in line and "worker-1 (" in line and "exit 137" in line
