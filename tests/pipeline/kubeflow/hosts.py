"""Hosts on one machine: one network namespace per pod, on a bridge, each with its own address and the cluster's names.

What a cluster gives the replicas of a job, here for real: every pod is a separate network stack
(`ip netns`) with its own IP address on a private subnet, joined to the others by a veth pair on a
Linux bridge, and resolves the other pods' DNS names through its own `/etc/hosts`
(`/etc/netns/<ns>/hosts`, which `ip netns exec` mounts over /etc/hosts). A process started in a
host sees only that host's network (its servers listen on that host's address and port, as in a pod)
and has the host's name (a UTS namespace), which resolves to its address.
`cut(host)` takes a host's link down (it drops off the network, its processes keep running).

Everything is removed by `close()` (and `VirtualNetwork` is a context manager); names carry a random
tag so that concurrent test runs do not meet. Needs root and `ip` (iproute2): `unavailable()` says why not.
"""

from __future__ import annotations

import functools
import os
import secrets
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

NETNS_ETC = Path("/etc/netns")


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=30)


@functools.cache
def unavailable() -> str | None:
    """Why network namespaces cannot be made here, or None when they can. Once a process: pytest's workers each
    collect every file, so two probes may run at once (the first ever also mounts /run/netns)."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "network namespaces need `ip` (apt-get install iproute2)"
    probe = f"kfprobe{secrets.token_hex(3)}"
    try:
        _ip("netns", "add", probe)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as error:
        return f"`ip netns add` failed: {getattr(error, 'stderr', b'').decode().strip() or error}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True, timeout=30)  # a leftover probe harms nothing
    return None


@dataclass
class Host:
    namespace: str
    address: str
    names: list[str]
    outside: str  # the veth end on the bridge, in the machine's own namespace


@dataclass
class VirtualNetwork:
    tag: str = field(default_factory=lambda: secrets.token_hex(2))
    hosts: list[Host] = field(default_factory=list)
    next_address: int = 2

    def __post_init__(self) -> None:
        # A /24 of 10.0.0.0/8 that exists only inside these namespaces (the bridge itself has no address).
        self.subnet = f"10.{200 + int(self.tag[:2], 16) % 50}.{int(self.tag[2:], 16)}"
        self.bridge = f"kf{self.tag}br"
        _ip("link", "add", self.bridge, "type", "bridge")
        _ip("link", "set", self.bridge, "up")

    def __enter__(self) -> VirtualNetwork:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def add(self, names: list[str]) -> Host:
        """A new host with the next address, known to every host by `names`."""
        index = self.next_address
        self.next_address += 1
        host = Host(f"kf{self.tag}-{index}", f"{self.subnet}.{index}", list(names), f"kf{self.tag}h{index}")
        inside = f"kf{self.tag}p{index}"
        _ip("netns", "add", host.namespace)
        self.hosts.append(host)
        _ip("link", "add", host.outside, "type", "veth", "peer", "name", inside)
        _ip("link", "set", inside, "netns", host.namespace)
        _ip("link", "set", host.outside, "master", self.bridge)
        _ip("link", "set", host.outside, "up")
        _ip("-n", host.namespace, "addr", "add", f"{host.address}/24", "dev", inside)
        _ip("-n", host.namespace, "link", "set", inside, "up")
        _ip("-n", host.namespace, "link", "set", "lo", "up")
        self._write_hosts_files()
        return host

    def remove(self, host: Host) -> None:
        """The host is gone (its namespace and link deleted); the others forget its names."""
        if host in self.hosts:
            self.hosts.remove(host)
            subprocess.run(["ip", "netns", "del", host.namespace], capture_output=True, timeout=30)
            shutil.rmtree(NETNS_ETC / host.namespace, ignore_errors=True)
            self._write_hosts_files()

    def cut(self, host: Host) -> None:
        """Takes the host's link down: it is off the network, its processes still run."""
        _ip("link", "set", host.outside, "down")

    def popen(self, host: Host, argv: list[str], **options: Any) -> subprocess.Popen:
        """A process on `host`: its network, and its host name (its first name's first label, as a pod's: gloo
        and others look their own name up); the same files as the machine."""
        hostname = host.names[0].split(".")[0]
        named = ["unshare", "--uts", "--", "sh", "-c", 'hostname "$0" && exec "$@"', hostname, *argv]
        return subprocess.Popen(["ip", "netns", "exec", host.namespace, *named], **options)

    def _write_hosts_files(self) -> None:
        lines = ["127.0.0.1 localhost", *(f"{h.address} {' '.join(h.names)}" for h in self.hosts)]
        for host in self.hosts:
            folder = NETNS_ETC / host.namespace
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "hosts").write_text("\n".join(lines) + "\n")

    def close(self) -> None:
        for host in list(self.hosts):
            self.remove(host)
        subprocess.run(["ip", "link", "del", self.bridge], capture_output=True, timeout=30)


def pods_on_hosts(network: VirtualNetwork):
    """A `start_pods` for the stand-in cluster: each pod on a host of its own, known by its DNS names, which every
    host can resolve before any pod starts (JobSet publishes the addresses of pods that are not ready yet)."""
    from tests.pipeline.kubeflow.stand_in_kube import LocalPod

    def start(pods):
        hosts = []
        for pod in pods:
            names = [pod.hostname, f"{pod.hostname}.{pod.namespace}.svc"]
            if pod.subdomain:
                names.insert(1, f"{pod.hostname}.{pod.subdomain}")
            hosts.append(network.add(names))
        started = []
        for pod, host in zip(pods, hosts, strict=True):
            running = LocalPod(pod, spawn=lambda argv, host=host, **options: network.popen(host, argv, **options),
                               on_stop=lambda host=host: network.remove(host))  # fmt: skip
            running.host = host
            started.append(running)
        return started

    return start


def train_on_hosts(tmp_path, examples, schema, *parameters, replicas=("worker=2",), options=()):
    """Runs the real job launcher for a Trainer job of MNIST (against the stand-in cluster the caller set up, whose
    KUBECONFIG is in the environment); returns (its exit code, the task's output folder)."""
    from kflow.pipeline.kubeflow import job_launcher

    out = tmp_path / "task"
    argv = [
        "--job-prefix=train", *(f"--replica={r}" for r in replicas), "--image=registry.example/kflow:1",
        "--namespace=kubeflow", "--shared-volume-claim=kflow-shared", f"--shared-mount-path={tmp_path / 'shared'}",
        "--poll-seconds=1", *options, "--",
        "python", "-m", "kflow.pipeline.runners.kfp_entrypoint",
        "--component", "kflow.components.trainer.component:Trainer",
        "--input", f"examples={examples}", "--input", f"schema={schema}",
        "--output", f"model={out / 'model'}", "--output", f"model_run={out / 'model_run'}",
        "--parameter", "dataset=mnist", "--parameter", "model_name=mnist_convnet",
        *(part for parameter in parameters for part in ("--parameter", parameter)),
    ]  # fmt: skip
    return job_launcher.main(argv), out
