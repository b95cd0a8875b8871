"""Issue 55 M7: the ports a job's NetworkPolicy admits are the ports its replicas' collectives use, measured.

Each multi-process strategy trains one epoch on a REAL local cluster (the Trainer's launcher, 2 workers, loopback),
while a thread reads the TCP sockets of every cluster process (`/proc/<pid>/fd` and `/proc/<pid>/net/tcp{,6}`: the
process's own network namespace, which is the cluster's private one when the tests run as root). A connection
from one process to a port another process listens on is traffic between two pods on a cluster: that port must
be admitted. A port the cluster's config names (TF_CONFIG's addresses, JAX's COORDINATOR_PORT) is the job's
configured port on Kubernetes (2222, 29500); any other is an ephemeral one, which no list of ports can name.

Measured (2 workers): MultiWorkerMirrored and the parameter-server strategy connect only to the ports TF_CONFIG
names; JAX's gloo connects to the coordinator's port and to an ephemeral port each process's gloo listens on.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

from kflow.components.trainer.executor import run
from kflow.pipeline.dsl.artifacts import Model, ModelRun
from kflow.pipeline.kubeflow import tfjob, trainjob
from kflow.pipeline.kubeflow.replica_env import JAX_PORT, TF_PORT
from tests.components.fixtures import write_examples, write_schema
from tests.pipeline.kubeflow.test_trainjob_env import cluster_job

EPHEMERAL = "ephemeral"  # A port no config names: what a process's library chose when it listened.
pytestmark = pytest.mark.distributed


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    root = tmp_path_factory.mktemp("collective-ports")
    return write_examples(root / "examples"), write_schema(root / "schema")


def _descendants(pid: int) -> set[int]:
    found = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            children = [int(child) for child in (task / "children").read_text().split()]
        except OSError:
            continue
        for child in children:
            found |= {child, *_descendants(child)}
    return found


def _cluster_environment(pid: int) -> dict[str, str]:
    """The process's cluster variables; {} for a process of no cluster (or an `ip netns exec` not yet exec'd)."""
    pairs = (item.split("=", 1) for item in Path(f"/proc/{pid}/environ").read_text().split("\0") if "=" in item)
    environment = dict(pairs)
    return {name: environment[name] for name in ("TF_CONFIG", "COORDINATOR_PORT") if name in environment}


def _tcp_sockets(pid: int) -> set[tuple[int, int, str]]:
    """(local port, remote port, state) of the process's TCP sockets, in its own network namespace."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    found = set()
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[9] in inodes:
                found.add((int(fields[1].rsplit(":", 1)[1], 16), int(fields[2].rsplit(":", 1)[1], 16), fields[3]))
    return found


LISTEN, ESTABLISHED = "0A", "01"


def measure(strategy: str, inputs, folder: Path, **parameters) -> tuple[set[int], set[int]]:
    """(the ports the cluster's config names, the ports one process of the cluster connected to on another) while
    `strategy` trains one epoch on a local 2-worker cluster."""
    environments: dict[int, dict[str, str]] = {}
    sockets: dict[int, set] = {}
    done = threading.Event()

    def sample():
        while not done.is_set():
            for pid in _descendants(os.getpid()):
                try:
                    environments[pid] = environments.get(pid) or _cluster_environment(pid)
                    if environments[pid]:
                        sockets.setdefault(pid, set()).update(_tcp_sockets(pid))
                except OSError:  # The process ended while read.
                    pass
            time.sleep(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    examples, schema = inputs
    try:
        run(dataset="mnist", examples=examples, schema=schema, model=Model(folder / "model"),
            model_run=ModelRun(folder / "model_run"), strategy=strategy, workers=2, epochs=1, batch_size=32, seed=1,
            max_restarts=0, working_dir=folder / "work", **parameters)  # fmt: skip
    finally:
        done.set()
        sampler.join()

    configured = set()
    for environment in environments.values():
        if "TF_CONFIG" in environment:
            cluster = json.loads(environment["TF_CONFIG"])["cluster"]
            configured |= {int(address.rpartition(":")[2]) for addresses in cluster.values() for address in addresses}
        if "COORDINATOR_PORT" in environment:
            configured.add(int(environment["COORDINATOR_PORT"]))
    listening = {pid: {local for local, _, state in found if state == LISTEN} for pid, found in sockets.items()}
    reached = set()
    for pid, found in sockets.items():
        for _, remote, state in found:
            # A process reaching its own port stays inside its pod: no policy applies.
            if state == ESTABLISHED and any(remote in ports for other, ports in listening.items() if other != pid):
                reached.add(remote)
    return configured, reached


def admitted_ports(policy: dict) -> set[int] | None:
    """The TCP ports a NetworkPolicy admits from the job's own pods, as Kubernetes reads it; None: every port."""
    (rule,) = policy["spec"]["ingress"]
    tcp = [entry for entry in rule.get("ports", [{"protocol": "TCP"}]) if entry.get("protocol", "TCP") == "TCP"]
    if any("port" not in entry for entry in tcp):
        return None
    return {entry["port"] for entry in tcp}


def check_policies_admit(strategy: str, configured: set[int], reached: set[int], parameter_servers: int = 0) -> None:
    """Every backend's policy for `strategy` admits exactly the measured ports: its configured port, and every TCP
    port if an ephemeral one was reached."""
    assert configured & reached, f"no connection to a configured port was seen: {reached}"
    job = cluster_job(strategy, 2, parameter_servers)
    needed = {"configured" if port in configured else EPHEMERAL for port in reached}
    backends = {
        "TrainJob": (trainjob.render_network_policy(job), JAX_PORT if job.framework == "jax" else TF_PORT),
        "TFJob/JAXJob": (tfjob.render_network_policy(job), tfjob.JOB_KINDS[job.framework].port[1]),
    }
    for backend, (policy, port) in backends.items():
        expected = None if EPHEMERAL in needed else {port}
        assert admitted_ports(policy) == expected, f"{backend} {strategy}: measured {sorted(reached)}, {configured=}"


@pytest.mark.slow  # ~18 s; make test renders the policies (below)
def test_a_jax_cluster_reaches_the_coordinator_and_gloos_ephemeral_ports_which_its_policy_admits(inputs, tmp_path):
    configured, reached = measure("keras_data_parallel", inputs, tmp_path)
    assert len(configured) == 1 and configured < reached  # The coordinator's port, and gloo's (at least one) besides.
    check_policies_admit("keras_data_parallel", configured, reached)


@pytest.mark.slow  # ~10 s each; make test keeps the JAX cluster, whose policy differs from a port list
@pytest.mark.parametrize("strategy, parameter_servers", [("multi_worker_mirrored", 0), ("parameter_server", 1)])
def test_a_tensorflow_cluster_reaches_only_its_configured_ports_which_its_policy_admits(
    strategy, parameter_servers, inputs, tmp_path
):
    extra = {"parameter_servers": parameter_servers} if parameter_servers else {}
    configured, reached = measure(strategy, inputs, tmp_path, **extra)
    assert reached <= configured
    check_policies_admit(strategy, configured, reached, parameter_servers)


def test_the_rendered_policies_admit_a_jax_jobs_pods_on_every_tcp_port_and_a_tensorflow_jobs_on_its_grpc_port():
    for render in (trainjob.render_network_policy, tfjob.render_network_policy):
        assert admitted_ports(render(cluster_job("keras_data_parallel", 2))) is None
        assert admitted_ports(render(cluster_job("multi_worker_mirrored", 2))) == {TF_PORT}
        assert admitted_ports(render(cluster_job("parameter_server", 2, 1))) == {TF_PORT}
