"""Issue 55 L8: as root, a local cluster's processes have no network but their own loopback (private_network.py).

A user module that calls a service on another address of this machine (the only addresses this test uses: one of
the machine's own, and its loopback) works in a one-process run and fails in a 2-worker cluster, whose failure
line then says why.
"""

from __future__ import annotations

import socket
import subprocess
import threading

import pytest

from kflow.components.trainer.executor import run as train
from kflow.components.trainer.private_network import unreachable_hint, why_not
from kflow.pipeline.dsl.artifacts import Model, ModelRun
from tests.components.datasets.tabular_fixtures import write_iris
from tests.components.trainer.user_models import csv_examples, module_source

pytestmark = pytest.mark.skipif(bool(why_not()), reason=f"no private network: {why_not()}")


def machine_address() -> str | None:
    """An IPv4 address of this machine other than a loopback one (`ip -4 -o addr`: `2: eth0 inet 10.1.2.3/24 ...`)."""
    listed = subprocess.run(["ip", "-4", "-o", "addr", "show", "scope", "global"], capture_output=True, text=True)
    for line in listed.stdout.splitlines():
        address = line.split()[3].split("/")[0]
        if not address.startswith("127."):
            return address
    return None


@pytest.fixture
def service():
    """A TCP service on a non-loopback address of this machine: (host, port, the number of connections it took)."""
    address = machine_address()
    if address is None:
        pytest.skip("this machine has no address but a loopback one")
    server = socket.create_server((address, 0))
    taken = []

    def serve():
        while True:
            try:
                connection, _ = server.accept()
            except OSError:  # closed: the test is over
                return
            taken.append(connection)
            connection.close()

    threading.Thread(target=serve, daemon=True).start()
    yield address, server.getsockname()[1], taken
    server.close()


@pytest.fixture(scope="module")
def iris(tmp_path_factory):
    root = tmp_path_factory.mktemp("iris")
    return csv_examples(root, write_iris(root / "iris.csv"), "species")


def calling_module(host: str, port: int) -> str:
    """A user module that calls the service when it is imported (to fetch a vocabulary, say)."""
    return module_source(extra=f"\nimport socket\n\nsocket.create_connection(({host!r}, {port}), timeout=10).close()\n")


@pytest.mark.slow  # make test says the hint (below)
@pytest.mark.distributed  # ~15 s: one process, then a 2-worker cluster
def test_a_module_that_calls_this_machines_address_works_alone_and_fails_in_a_cluster_saying_why(
    iris, service, tmp_path
):
    examples, schema = iris
    host, port, taken = service
    source = calling_module(host, port)

    def run(name, **parameters):
        train(examples=examples, schema=schema, model=Model(tmp_path / name / "model"), dataset="csv",
              model_run=ModelRun(tmp_path / name / "run"), working_dir=tmp_path / name / "work", module="my_model.py",
              module_source=source, epochs=1, batch_size=16, max_restarts=0, **parameters)  # fmt: skip

    run("alone")  # In this machine's network: the service answers.
    assert taken, "the one-process run never reached the service"
    before = len(taken)
    with pytest.raises(Exception) as failed:
        run("cluster", strategy="multi_worker_mirrored", workers=2)
    message = str(failed.value)
    assert "failed with exit code" in message and "private network" in message, message
    assert "docs/training.md" in message
    assert len(taken) == before, "a cluster process reached the service"


def test_the_hint_is_for_a_private_networks_processes_that_reached_for_another_network():
    unreachable = ["OSError: [Errno 101] Network is unreachable\n"]
    assert unreachable_hint(["ip", "netns", "exec", "kflow-1-ab"], unreachable).startswith("; it ran in the cluster's")
    assert unreachable_hint([], unreachable) == ""  # in this machine's network: not the cause
    assert unreachable_hint(["ip", "netns", "exec", "kflow-1-ab"], ["ValueError: bad shape\n"]) == ""
