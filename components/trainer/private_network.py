"""A local training cluster's own network: a namespace with only a loopback, which no other host can reach.

A local cluster's processes talk over 127.0.0.1, but TensorFlow's gRPC servers bind `0.0.0.0:port` (no bind
option) and JAX's coordinator `[::]:port`, unauthenticated: any host that reaches this machine could run
graph ops in a worker. When kflow runs as root with `ip` (iproute2), every process of the cluster runs in a
network namespace of its own (`ip netns exec`): its servers listen there, on the only interface it has, the
loopback. The machine's host name resolves to 127.0.0.1 inside (`/etc/netns/<ns>/hosts`), for libraries
that look their own name up (JAX's gloo collectives). Otherwise (not root, no `ip`) the processes run as
before, and one log line says their ports are open on every interface.

Namespaces are named `kflow-<launcher pid>-<tag>`; a launcher removes its own on the way out, and the ones
of launchers that died (SIGKILL) when it starts.

The price: inside, nothing but the loopback exists. A user module that calls a service (a URL, a database,
another address of this very machine, a name from this machine's /etc/hosts) works in a one-process run and
fails in a cluster's processes, with "Network is unreachable" or a failed name lookup; when a cluster
process fails so, the launcher's failure line says why (`unreachable_hint`). Fetch what the module needs
before training (into the data, or a file the module reads), or run kflow as a user other than root.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import shutil
import socket
import subprocess
from collections.abc import Iterable, Iterator
from pathlib import Path

log = logging.getLogger("kflow.trainer.launcher")

NETNS_ETC = Path("/etc/netns")


def _ip(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)


def why_not() -> str | None:
    """Why the cluster cannot have a private network here, or None when it can."""
    if os.geteuid() != 0:
        return "not root"
    if shutil.which("ip") is None:
        return "no `ip` (iproute2)"
    return None


def _remove(name: str) -> None:
    _ip("netns", "del", name)
    shutil.rmtree(NETNS_ETC / name, ignore_errors=True)


def _remove_orphans() -> None:
    """The namespaces of launchers that are gone."""
    for line in _ip("netns", "list").stdout.splitlines():
        name = line.split()[0] if line.split() else ""
        parts = name.split("-")
        if len(parts) == 3 and parts[0] == "kflow" and parts[1].isdigit() and not Path(f"/proc/{parts[1]}").exists():
            _remove(name)


@contextlib.contextmanager
def private_network(processes: int = 2) -> Iterator[list[str]]:
    """Yields the command prefix that starts a process in the cluster's own network ([] when there is none); one
    process alone has no peers to listen for, and needs none."""
    if processes < 2:
        yield []
        return
    reason = why_not()
    if reason is None:
        _remove_orphans()
        name = f"kflow-{os.getpid()}-{secrets.token_hex(3)}"
        made = _ip("netns", "add", name)
        if made.returncode == 0 and _ip("-n", name, "link", "set", "lo", "up").returncode == 0:
            try:
                (NETNS_ETC / name).mkdir(parents=True, exist_ok=True)
                (NETNS_ETC / name / "hosts").write_text(f"127.0.0.1 localhost {socket.gethostname()}\n::1 localhost\n")
                yield ["ip", "netns", "exec", name]
            finally:
                _remove(name)
            return
        _remove(name)
        reason = f"`ip netns add` failed: {made.stderr.strip()}"
    log.warning(
        "train: the cluster's ports listen on every interface of this machine (%s: no private network for it)", reason
    )
    yield []


# What a process prints when it reached for a network its namespace does not have: a route (ENETUNREACH), a name
# server or a name from this machine's /etc/hosts (getaddrinfo's EAI_AGAIN, EAI_NONAME).
UNREACHABLE = ("Network is unreachable", "Temporary failure in name resolution", "Name or service not known")


def unreachable_hint(prefix: list[str], output: Iterable[str]) -> str:
    """What a cluster process's failure line adds when the process ran in a private network (`prefix`, as
    `private_network` gave it) and its last `output` lines say it reached for another network; '' otherwise."""
    if not prefix or not any(sign in line for line in output for sign in UNREACHABLE):
        return ""
    return (
        "; it ran in the cluster's private network (kflow as root: a namespace with only a loopback), which "
        "reaches no other host, no other address of this machine and no name of its /etc/hosts: "
        "see docs/training.md, 'A cluster's processes have no network'"
    )
