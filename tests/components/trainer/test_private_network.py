"""A local cluster's processes listen where no other host can reach them: a network namespace with only a loopback."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path

import psutil
import pytest

from kflow.components.trainer import launcher
from kflow.components.trainer.config import TrainConfig
from kflow.components.trainer.private_network import why_not
from kflow.pipeline.dsl import heartbeat
from tests.components.fixtures import cluster_spec, write_examples, write_schema

pytestmark = [pytest.mark.distributed, pytest.mark.skipif(bool(why_not()), reason=f"no private network: {why_not()}")]


def listening(pid: int) -> set[int]:
    """The TCP ports listened on in the network namespace of process `pid` (its own /proc view)."""
    ports = set()
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            if state == "0A":  # LISTEN
                ports.add(int(local.rsplit(":", 1)[1], 16))
    return ports


@pytest.mark.slow  # ~22 s; make test keeps clusters on their own hosts (tests/pipeline/kubeflow).
def test_a_two_worker_cluster_listens_on_no_address_of_this_machine(tmp_path):
    examples, schema = write_examples(tmp_path / "examples"), write_schema(tmp_path / "schema")
    work = tmp_path / "work"
    config = TrainConfig(strategy="multi_worker_mirrored", epochs=20, batch_size=32)  # long enough to look at
    spec = cluster_spec(tmp_path, examples, schema, config)
    seen = {}

    def look_while_it_trains(processes):
        deadline = time.monotonic() + 120
        while (
            time.monotonic() < deadline
            and heartbeat.last_beats(work / "heartbeats").get("worker-1", {}).get("step", 0) < 3
        ):
            time.sleep(0.05)
        pids = {process.pid for process in processes.values()}
        seen["machine"] = [
            c for c in psutil.net_connections(kind="inet") if c.status == psutil.CONN_LISTEN and c.pid in pids
        ]
        seen["inside"] = {name: listening(process.pid) for name, process in processes.items()}
        seen["ports"] = {  # where each worker's gRPC server is, by its TF_CONFIG
            name: int(
                json.loads(psutil.Process(p.pid).environ()["TF_CONFIG"])["cluster"]["worker"][int(name[-1])].rsplit(
                    ":", 1
                )[1]
            )
            for name, p in processes.items()
        }
        seen["interfaces"] = {
            line.split(":")[0].strip()
            for line in Path(f"/proc/{processes['worker-0'].pid}/net/dev").read_text().splitlines()[2:]
        }

    launcher.launch(spec, spec_dir=work, workers=2, sink=io.StringIO(), on_start=look_while_it_trains, timeout=300)
    assert seen["machine"] == []  # nothing of the cluster listens in the machine's own network
    assert seen["interfaces"] == {"lo"}  # where the workers are, the loopback is the only interface
    for name, port in seen["ports"].items():  # and the workers' gRPC servers do listen, in there
        assert port in seen["inside"][name], (name, port, seen["inside"][name])
