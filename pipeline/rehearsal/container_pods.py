"""A rehearsal's cluster: the STAND-IN Kubernetes API server and Trainer/JobSet controllers (stand_in_kube.py), whose
pods are containers of the image on a container network, each pod its own host.

What a TrainJob's pod gets here, as JobSet and the kubelet would give it: its JobSet host name (`<job>-<index>`) and
an address of its own on the rehearsal's network, the other pods' DNS names in its hosts file before they start
(JobSet publishes them so), its container's command, arguments, resolved environment and resource limits, the pod's
securityContext (its user and group; every capability dropped, no new privileges; here also a read-only root with a
tmpfs /tmp), the shared volume (its claim) as a podman named volume at its mount path, and no service-account token
(the replicas' pods do not mount one). A restart makes new pods: same host names, new addresses.

The compiled train task (the job launcher) runs as a container on the same network and reaches the stand-in API
server at the network's gateway with a kubeconfig: the part of its pod's service account. A small container keeps
the network's bridge up from the start, so that the server listens on the gateway's address only.
"""

from __future__ import annotations

import random
import re
import secrets
import subprocess
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kflow.pipeline.rehearsal.podman import LOCAL_IMAGE, ContainerSpec, Mount, Podman, owned_by_user
from kflow.pipeline.rehearsal.stand_in_kube import StandInKubernetes
from kflow.pipeline.rehearsal.stand_in_trainer import Pod, pod_phase

KUBECONFIG_IN_TASK = "/var/run/kflow-rehearsal/kubeconfig"
_QUANTITY = re.compile(r"^([0-9.]+)([a-zA-Z]*)$")
_SUFFIXES = {
    "": 1,
    "m": 1e-3,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
}


def quantity(value: Any) -> float | None:
    """A Kubernetes quantity ("500m", "2", "4Gi") as a number; None for none."""
    if value in (None, ""):
        return None
    match = _QUANTITY.match(str(value))
    if not match or match[2] not in _SUFFIXES:
        raise ValueError(f"not a Kubernetes quantity: {value!r}")
    return float(match[1]) * _SUFFIXES[match[2]]


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class ContainerPod:
    """A pod as a container (what stand_in_kube's controllers follow: `pod`, `lines`, `exit_code`, `phase`, `stop`)."""

    def __init__(self, podman: Podman, pod: Pod, spec: ContainerSpec) -> None:
        self.podman, self.pod, self.spec = podman, pod, spec
        self.lines: list[tuple[str, str]] = []
        self.exit_code: int | None = None
        self.stopped = False
        self.process = podman.popen(
            spec, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
        )
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    @property
    def name(self) -> str:
        return self.spec.name

    def _read(self) -> None:
        addresses: dict[str, str] = {}
        looker = threading.Thread(target=lambda: addresses.update(self.podman.running_addresses(self.name)))
        looker.start()
        for line in self.process.stdout:
            self.lines.append((_now(), line.rstrip("\n")))
        code = self.process.wait()  # the container's: 137 when it was killed
        looker.join()
        self.podman.finish(self.spec.name, addresses)
        self.exit_code = code

    @property
    def phase(self) -> str:
        return pod_phase(self.exit_code, self.stopped)

    def stop(self) -> None:
        """As the kubelet deletes a pod: SIGTERM, SIGKILL after a grace period."""
        if self.exit_code is None:
            self.stopped = True
            self.podman.call("stop", "--ignore", "--time", "10", self.spec.name, check=False, timeout=60)
        self.reader.join(timeout=60)


class RehearsalCluster:
    """A container network, the claims as named volumes, and the stand-in API server and controllers on its gateway.
    A context manager: everything it made is removed on exit (the claims' folders stay)."""

    def __init__(self, podman: Podman, claims: dict[str, Path], image: str = LOCAL_IMAGE) -> None:
        self.podman, self.image = podman, image
        self.claims = claims
        self.volumes: dict[str, str] = {}
        self.pods: list[ContainerPod] = []
        self.next_host = 2
        self.server: StandInKubernetes | None = None

    def __enter__(self) -> RehearsalCluster:
        try:
            self._start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _start(self) -> None:
        tag = self.podman.rehearsal
        for attempt in range(20):  # a /24 of 10.0.0.0/8 no other network of this machine uses
            self.prefix = f"10.{random.randint(100, 199)}.{random.randint(0, 255)}"
            try:
                # Pods take .2 up (static addresses, new ones at each restart), the task containers .128 up.
                self.network = self.podman.create_network(
                    f"kflow-{tag}", f"{self.prefix}.0/24", f"{self.prefix}.128/25"
                )
                break
            except RuntimeError:
                if attempt == 19:
                    raise
        self.gateway = f"{self.prefix}.1"
        for claim, folder in self.claims.items():
            owned_by_user([folder])
            self.volumes[claim] = self.podman.create_volume(f"kflow-{tag}-{claim}", folder)
        keeper = ContainerSpec(self.image, ["sleep", "infinity"], f"kflow-{tag}-network", network=self.network)
        self.podman.call("run", "--detach", *self.podman.run_options(keeper), keeper.image, *keeper.command)
        self.server = StandInKubernetes(start_pods=self.start_pods, address=self.gateway)
        self.server.__enter__()

    def kubeconfig(self, folder: Path) -> Path:
        """The launcher's access to the stand-in API server, for a task container (readable by uid 10001)."""
        path = self.server.kubeconfig(folder / "kubeconfig", host=self.gateway)
        path.chmod(0o644)
        return path

    def task_settings(self, folder: Path) -> dict[str, Any]:
        """What a task container of the rehearsal gets besides its own: the network, and the kubeconfig."""
        return {
            "network": self.network,
            "mounts": [Mount(str(self.kubeconfig(folder)), KUBECONFIG_IN_TASK, read_only=True)],
            "env": {"KUBECONFIG": KUBECONFIG_IN_TASK},
        }

    def start_pods(self, pods: list[Pod]) -> list[ContainerPod]:
        """Each pod a container with its own new address; every pod's names known to all before any starts."""
        addresses = []
        for _ in pods:
            if self.next_host >= 128:
                raise RuntimeError("the rehearsal's network has no address left for another pod (126 made)")
            addresses.append(f"{self.prefix}.{self.next_host}")
            self.next_host += 1
        hosts: dict[str, str] = {}
        for pod, address in zip(pods, addresses, strict=True):
            names = [f"{pod.hostname}.{pod.namespace}.svc"]
            if pod.subdomain:
                names = [f"{pod.hostname}.{pod.subdomain}", f"{pod.hostname}.{pod.subdomain}.{pod.namespace}.svc"]
            hosts.update({name: address for name in names})
        started = [
            ContainerPod(self.podman, pod, self.pod_container(pod, address, hosts))
            for pod, address in zip(pods, addresses, strict=True)
        ]
        self.pods += started
        return started

    def pod_container(self, pod: Pod, address: str, hosts: dict[str, str]) -> ContainerSpec:
        """The pod's container as podman runs it: from the pod spec the controllers made."""
        container = pod.spec["containers"][0]
        context = {**pod.spec.get("securityContext", {}), **container.get("securityContext", {})}
        if context.get("runAsNonRoot") and not context.get("runAsUser"):
            raise ValueError(f"pod {pod.name}: runAsNonRoot without runAsUser (the image's user is 10001)")
        user = f"{context.get('runAsUser', 10001)}:{context.get('runAsGroup', context.get('runAsUser', 10001))}"
        claims = {volume["name"]: volume["persistentVolumeClaim"]["claimName"] for volume in pod.spec.get("volumes", [])
                  if "persistentVolumeClaim" in volume}  # fmt: skip
        mounts = [
            Mount(self.volumes[claims[mount["name"]]], mount["mountPath"])
            for mount in container.get("volumeMounts", [])
            if mount["name"] in claims
        ]
        if pod.spec.get("automountServiceAccountToken", True):
            raise ValueError(f"pod {pod.name} would mount its service account's token: replicas get none")
        limits = container.get("resources", {}).get("limits", {})
        memory = quantity(limits.get("memory"))
        return ContainerSpec(
            image=container["image"],
            command=[*container.get("command", []), *container.get("args", [])],
            name=f"kflow-{self.podman.rehearsal}-{pod.name}",
            env=pod.environment(),
            mounts=mounts,
            cpus=quantity(limits.get("cpu")),
            memory_bytes=int(memory) if memory else None,
            network=self.network,
            hostname=pod.hostname,
            address=address,
            hosts=hosts,
            user=user,
        )

    def close(self) -> None:
        if self.server is not None:
            self.server.__exit__(None, None, None)
            self.server = None
        self.podman.remove_all()


def pod_fields(name: str) -> dict[str, str]:
    """The Downward API fields a compiled task asks for (fieldPathAsEnv), as its pod would have them."""
    return {"metadata.name": name, "metadata.uid": secrets.token_hex(16), "metadata.namespace": "kubeflow"}
