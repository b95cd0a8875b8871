"""Podman as a rehearsal's container engine: every task and every replica a container of the kflow image, as a pod runs.

What a pod of a restricted namespace gets, each container gets here: uid 10001, a read-only root with a tmpfs at
/tmp, no capabilities, no new privileges, the CPU and memory limits of its spec, its mounts and nothing else (no
service-account token: nothing is mounted under /var/run/secrets). Podman runs with runc and cgroupfs (crun refuses
the hybrid cgroups of the machines this was built on) and with `nofile`/`nproc` limits at or below this machine's
hard limits (podman's defaults exceed them, and raising them needs a capability such machines lack).

Everything a rehearsal creates carries the label `kflow.rehearsal=<its id>`, and `Podman.remove_all` removes its
containers, networks and volumes by that label: a rehearsal cleans up after itself even when it fails.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import resource
import secrets
import shutil
import subprocess
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

LOCAL_IMAGE = "localhost/kflow:local"  # what `make image` (deploy/build-image.sh) builds
USER = "10001:10001"  # the image's user, and the pods' runAsUser
LABEL = "kflow.rehearsal"


def unavailable(image: str = LOCAL_IMAGE) -> str | None:
    """Why tasks cannot run in containers here, or None when they can."""
    if shutil.which("podman") is None:
        return "no container engine (podman) on this machine"
    if shutil.which("runc") is None:
        return "podman needs runc here (apt-get install runc)"
    found = subprocess.run(
        ["podman", *Podman.GLOBAL, "image", "exists", image], capture_output=True, text=True, timeout=60
    )
    if found.returncode != 0:
        return f"no image {image} (make image builds it)"
    return None


def code_digest(checkout: Path) -> str:
    """The digest of kflow's code in `checkout` as deploy/build-image.sh labels the image with it (kflow.code-digest):
    sha256 of `sha256sum` over every file of pipeline/, components/ and schemas/ but bytecode, in byte order."""
    files = sorted(
        str(path.relative_to(checkout))
        for folder in ("pipeline", "components", "schemas")
        for path in (checkout / folder).rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    )
    lines = "".join(f"{hashlib.sha256((checkout / name).read_bytes()).hexdigest()}  {name}\n" for name in files)
    return hashlib.sha256(lines.encode()).hexdigest()[:16]


def image_code_digest(image: str) -> str | None:
    """The kflow.code-digest label of `image` (None without one)."""
    found = subprocess.run(
        ["podman", *Podman.GLOBAL, "image", "inspect", "--format", '{{index .Labels "kflow.code-digest"}}', image],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    value = found.stdout.strip()
    return value if found.returncode == 0 and value and value != "<no value>" else None


def ulimits() -> list[str]:
    """`--ulimit` options at or below this machine's hard limits."""
    options = []
    for name, limit, cap in (("nofile", resource.RLIMIT_NOFILE, 65536), ("nproc", resource.RLIMIT_NPROC, 4096)):
        hard = resource.getrlimit(limit)[1]
        value = cap if hard == resource.RLIM_INFINITY else min(hard, cap)
        options += ["--ulimit", f"{name}={value}:{value}"]
    return options


@dataclass(frozen=True)
class Mount:
    source: str  # a host folder or file, or a named volume
    target: str
    read_only: bool = False

    def option(self) -> str:
        return f"{self.source}:{self.target}:{'ro' if self.read_only else 'rw'}"


@dataclass
class ContainerSpec:
    """One container as a pod's would run: what it runs, as whom, with which files, network and limits."""

    image: str
    command: list[str]
    name: str
    env: dict[str, str] = field(default_factory=dict)
    mounts: list[Mount] = field(default_factory=list)
    cpus: float | None = None
    memory_bytes: int | None = None
    network: str | None = None
    hostname: str | None = None
    aliases: list[str] = field(default_factory=list)
    address: str | None = None  # its address on `network` (a static one: the others' hosts files name it)
    hosts: dict[str, str] = field(default_factory=dict)  # extra /etc/hosts lines: {name: address}
    user: str = USER


@dataclass(frozen=True)
class ContainerRecord:
    """What the engine says a container ran as (`podman container inspect` once it ended)."""

    name: str
    image: str
    user: str
    read_only_root: bool
    capabilities: list[str]  # effective; [] after --cap-drop ALL
    addresses: dict[str, str]  # {network: address}
    hostname: str
    memory_bytes: int
    cpus: float
    exit_code: int

    @classmethod
    def of(cls, inspected: dict) -> ContainerRecord:
        networks = inspected["NetworkSettings"].get("Networks") or {}
        return cls(
            name=inspected["Name"],
            image=inspected["ImageName"],
            user=inspected["Config"]["User"],
            read_only_root=bool(inspected["HostConfig"]["ReadonlyRootfs"]),
            capabilities=list(inspected.get("EffectiveCaps") or []),
            addresses={name: found.get("IPAddress", "") for name, found in networks.items()},
            hostname=inspected["Config"]["Hostname"],
            memory_bytes=int(inspected["HostConfig"].get("Memory") or 0),
            cpus=int(inspected["HostConfig"].get("NanoCpus") or 0) / 1e9,
            exit_code=int(inspected["State"]["ExitCode"]),
        )


class Podman:
    """The engine, bound to one rehearsal's label; `records` has every container it ran, once ended."""

    GLOBAL = ["--runtime", "runc", "--cgroup-manager", "cgroupfs"]

    def __init__(self, rehearsal: str | None = None) -> None:
        self.rehearsal = rehearsal or secrets.token_hex(4)
        self.records: list[ContainerRecord] = []

    def command(self, *args: str) -> list[str]:
        return ["podman", *self.GLOBAL, *args]

    def call(self, *args: str, timeout: float = 120, check: bool = True) -> subprocess.CompletedProcess:
        result = subprocess.run(self.command(*args), capture_output=True, text=True, timeout=timeout)
        if check and result.returncode != 0:
            raise RuntimeError(f"podman {args[0]} failed: {result.stderr.strip()[-2000:]}")
        return result

    def run_options(self, spec: ContainerSpec) -> list[str]:
        """`podman run` options of a pod's container (without the image and command)."""
        options = [
            "--name", spec.name, "--label", f"{LABEL}={self.rehearsal}",
            "--user", spec.user, "--read-only", "--tmpfs", "/tmp:rw,nosuid,nodev,mode=1777",
            "--cap-drop", "ALL", "--security-opt", "no-new-privileges", *ulimits(),
        ]  # fmt: skip
        if spec.cpus:
            options += ["--cpus", f"{min(spec.cpus, os.cpu_count() or 1):g}"]
        if spec.memory_bytes:
            options += ["--memory", str(spec.memory_bytes)]
        for mount in spec.mounts:
            options += ["--volume", mount.option()]
        for name, value in spec.env.items():
            options += ["--env", f"{name}={value}"]
        if spec.network:
            options += ["--network", spec.network, *(f"--network-alias={alias}" for alias in spec.aliases)]
            if spec.address:
                options += ["--ip", spec.address]
        if spec.hostname:
            options += ["--hostname", spec.hostname]
        for name, address in spec.hosts.items():
            options += ["--add-host", f"{name}:{address}"]
        return options

    def run(self, spec: ContainerSpec, timeout: float) -> subprocess.CompletedProcess:
        """Runs the container to its end, records it and removes it; its output and exit code."""
        argv = self.command("run", *self.run_options(spec), spec.image, *spec.command)
        try:
            return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        finally:
            self.finish(spec.name)

    def popen(self, spec: ContainerSpec, **options) -> subprocess.Popen:
        """Starts the container attached (its output on the process's pipes); `finish` once it ended."""
        argv = self.command("run", *self.run_options(spec), spec.image, *spec.command)
        return subprocess.Popen(argv, **options)

    def finish(self, name: str, addresses: dict[str, str] | None = None) -> None:
        """Records the ended container (if it was made) and removes it. An ended container has left its networks:
        `addresses` are those the engine reported while it ran (`running_addresses`)."""
        inspected = self.call("container", "inspect", name, check=False)
        if inspected.returncode == 0:
            record = ContainerRecord.of(json.loads(inspected.stdout)[0])
            if addresses:
                record = dataclasses.replace(record, addresses=addresses)
            self.records.append(record)
        self.call("rm", "--force", "--ignore", "--time", "5", name, check=False)

    def running_addresses(self, name: str, seconds: float = 60) -> dict[str, str]:
        """{network: address} of a container once it runs (empty if it ended first)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            found = self.call("container", "inspect", name, check=False)
            if found.returncode == 0:
                inspected = json.loads(found.stdout)[0]
                networks = inspected["NetworkSettings"].get("Networks") or {}
                addresses = {network: value.get("IPAddress", "") for network, value in networks.items()}
                if all(addresses.values()) and addresses:
                    return addresses
                if inspected["State"]["Status"] in ("exited", "stopped"):
                    return {}
            time.sleep(0.2)
        return {}

    def create_network(self, name: str, subnet: str, dynamic: str) -> str:
        """A bridge network on `subnet`, whose containers without an address of their own get one of `dynamic`."""
        self.call(
            "network", "create", "--label", f"{LABEL}={self.rehearsal}", "--subnet", subnet, "--ip-range", dynamic, name
        )
        return name

    def create_volume(self, name: str, folder: Path | None = None) -> str:
        """A named volume; with `folder`, one whose files are that folder's (kept after the rehearsal)."""
        backing = ["--opt", "type=none", "--opt", "o=bind", "--opt", f"device={folder}"] if folder else []
        self.call("volume", "create", "--label", f"{LABEL}={self.rehearsal}", *backing, name)
        return name

    def inspect(self, name: str) -> dict:
        return json.loads(self.call("container", "inspect", name).stdout)[0]

    def containers(self) -> list[str]:
        listed = self.call("ps", "--all", "--filter", f"label={LABEL}={self.rehearsal}", "--format", "{{.Names}}")
        return listed.stdout.split()

    def remove_all(self) -> None:
        """Removes the rehearsal's containers, then its networks and volumes."""
        names = self.containers()
        if names:
            self.call("rm", "--force", "--time", "5", *names, check=False, timeout=300)
        selector = f"label={LABEL}={self.rehearsal}"
        for kind in ("network", "volume"):
            listed = self.call(kind, "ls", "--filter", selector, "--format", "{{.Name}}", check=False)
            for name in listed.stdout.split():
                self.call(kind, "rm", "--force", name, check=False)


def owned_by_user(paths: Iterable[Path]) -> None:
    """Gives the folders to the image's user (uid 10001), as a pod's volume is writable by its fsGroup."""
    uid, gid = (int(part) for part in USER.split(":"))
    for path in paths:
        path.mkdir(parents=True, exist_ok=True)
        os.chown(path, uid, gid)
