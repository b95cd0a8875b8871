"""What a multi-process Trainer needs from a cluster, whichever job runs it (a TrainJob or a TFJob).

`ClusterJob` is the request both backends render (`trainjob.py`, `tfjob.py`): one replica per
process of the Trainer's cluster, laid out like its local cluster (`Component.cluster_replicas`:
chief, worker, ps, evaluator), each running `kflow.pipeline.kubeflow.replica` with the same
entrypoint in the same image. The pod settings here are shared by both: least privilege (the
replicas' own service account without its token, the Pod Security "restricted" profile) and the
shared volume.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kflow.pipeline.kubeflow.replica_env import ROLES

REPLICA_COMMAND = ["python", "-m", "kflow.pipeline.kubeflow.replica"]
SHARED_VOLUME = "kflow-shared"
PART_OF = {"app.kubernetes.io/part-of": "kflow"}
IMAGE_USER = 10001  # deploy/Dockerfile's non-root user
FRAMEWORKS = ("tensorflow", "jax")
TRAINING_SERVICE_ACCOUNT = "kflow-training"

# Pod Security Standards, "restricted" profile (what namespaces labelled pod-security.kubernetes.io/enforce:
# restricted admit): non-root, no privilege escalation, every capability dropped, the runtime's seccomp profile.
POD_SECURITY_CONTEXT = {
    "runAsNonRoot": True,
    "runAsUser": IMAGE_USER,
    "runAsGroup": IMAGE_USER,
    "fsGroup": IMAGE_USER,
    "seccompProfile": {"type": "RuntimeDefault"},
}
CONTAINER_SECURITY_CONTEXT = {
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
    "runAsNonRoot": True,
    "seccompProfile": {"type": "RuntimeDefault"},
}


@dataclass(frozen=True)
class ClusterJob:
    name: str
    namespace: str
    image: str
    entrypoint: list[str]  # What every replica runs after `replica` set its variables; `{replica}` is its name.
    replicas: dict[str, int]  # {role: processes}, roles as TF_CONFIG names them
    framework: str = "tensorflow"  # tensorflow (TF_CONFIG) | jax (JAX's coordinator variables)
    shared_volume_claim: str = SHARED_VOLUME
    shared_mount_path: str = "/mnt/kflow-shared"
    service_account: str = TRAINING_SERVICE_ACCOUNT
    # Per role: its container's `resources`, its pod's `nodeSelector` and `tolerations`.
    pod_settings: dict[str, dict[str, Any]] = field(default_factory=dict)
    max_restarts: int = 0  # Times the whole group restarts (from its last checkpoint) before the job fails.
    deadline_seconds: int = 86400
    component: str = "train"  # The pipeline node it runs (names its runtime).

    def __post_init__(self) -> None:
        if self.framework not in FRAMEWORKS:
            raise ValueError(f"framework must be one of {', '.join(FRAMEWORKS)} (got {self.framework!r})")
        unknown = set(self.replicas) - set(ROLES)
        if unknown or not self.replicas or min(self.replicas.values()) < 1:
            raise ValueError(f"replicas must map {', '.join(ROLES)} to counts ≥ 1 (got {self.replicas})")
        if self.framework == "jax" and set(self.replicas) != {"worker"}:
            raise ValueError(f"a JAX cluster has workers only (got {self.replicas})")
        if not self.entrypoint:
            raise ValueError("the replicas' entrypoint must not be empty")
        if set(self.pod_settings) - set(self.replicas):
            raise ValueError(f"pod settings for {sorted(set(self.pod_settings) - set(self.replicas))}: not roles")
        if not dns_label(self.name) or len(self.name) > MAX_JOB_NAME:
            raise ValueError(f"job name {self.name!r} must be a DNS label of at most {MAX_JOB_NAME} characters")

    @property
    def roles(self) -> list[str]:
        return [role for role in ROLES if role in self.replicas]

    def writer(self) -> str:
        """The replica whose outputs are the job's: the chief if there is one, else worker 0."""
        return "chief-0" if "chief" in self.replicas else "worker-0"


# A pod's host name is `<job>-<replicated job>-0-<index>` and must stay within 63 characters.
MAX_JOB_NAME = 63 - len("-evaluator-0-999")


def dns_label(name: str) -> bool:
    return bool(re.fullmatch(r"[a-z]([-a-z0-9]*[a-z0-9])?", name))


def job_name(prefix: str, token: str) -> str:
    """`<prefix>-<token>` as a DNS label short enough for its pods' host names (a node id may hold `_`)."""
    cleaned = re.sub(r"[^a-z0-9-]+", "-", prefix.lower()).strip("-") or "job"
    if not cleaned[0].isalpha():
        cleaned = f"j-{cleaned}"
    return f"{cleaned[: MAX_JOB_NAME - len(token) - 1].rstrip('-')}-{token}"


def digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def shared_volume(job: ClusterJob) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the pod's volume, the container's mount) of the shared volume."""
    return (
        {"name": SHARED_VOLUME, "persistentVolumeClaim": {"claimName": job.shared_volume_claim}},
        {"name": SHARED_VOLUME, "mountPath": job.shared_mount_path},
    )


def replica_pod_spec(job: ClusterJob, role: str, container: dict[str, Any]) -> dict[str, Any]:
    """A replica's pod spec around `container` (name, image, command, env, ports): the role's resources and
    placement, the shared volume, its service account without a token, and the restricted security contexts."""
    volume, mount = shared_volume(job)
    settings = copy.deepcopy(job.pod_settings.get(role, {}))
    container = {
        **container,
        "resources": settings.get("resources", {}),
        "securityContext": copy.deepcopy(CONTAINER_SECURITY_CONTEXT),
        "volumeMounts": [mount],
    }
    pod = {
        "restartPolicy": "Never",
        "serviceAccountName": job.service_account,
        "automountServiceAccountToken": False,  # Training code needs no Kubernetes API access.
        "securityContext": copy.deepcopy(POD_SECURITY_CONTEXT),
        "containers": [container],
        "volumes": [volume],
    }
    for field_name in ("nodeSelector", "tolerations"):
        if settings.get(field_name):
            pod[field_name] = settings[field_name]
    return pod


def owner_reference(api_version: str, kind: str, name: str, uid: str) -> dict[str, Any]:
    """A reference that makes Kubernetes delete the dependent when `name` goes (no finalizer rights needed)."""
    return {"apiVersion": api_version, "kind": kind, "name": name, "uid": uid}


def collective_ports(framework: str, port: int) -> list[int] | None:
    """The TCP ports a replica of `framework` is reached on by the others, `port` being its configured one; None:
    every TCP port. TensorFlow's gRPC (MultiWorkerMirrored's collectives, parameter servers) uses only the servers'
    ports; JAX's gloo (and NCCL's) collectives listen on ephemeral ports besides the coordinator's, so a list of
    ports would drop them (measured: tests/pipeline/kubeflow/test_collective_ports.py)."""
    return None if framework == "jax" else [port]


def isolation_policy(name: str, namespace: str, selector: dict[str, str], ports: list[int] | None) -> dict[str, Any]:
    """A NetworkPolicy admitting to the selected pods only the same pods, over TCP on `ports` (None: any TCP port),
    and nothing else."""
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(PART_OF)},
        "spec": {
            "podSelector": {"matchLabels": dict(selector)},
            "policyTypes": ["Ingress"],
            "ingress": [
                {
                    "from": [{"podSelector": {"matchLabels": dict(selector)}}],
                    # A port entry without a port admits every port of its protocol.
                    "ports": [{"protocol": "TCP", "port": port} for port in ports] if ports else [{"protocol": "TCP"}],
                }
            ],
        },
    }


@dataclass(frozen=True)
class JobBackend:
    """How one kind of cluster job is created and read (`trainjob.BACKEND`, `tfjob.BACKEND`)."""

    name: str  # the `kubeflow.training` value
    group: str
    version: str
    plural: Callable[[ClusterJob], str]
    render: Callable[[ClusterJob, dict[str, Any] | None], dict[str, Any]]  # (job, owner) → the job's manifest
    network_policy: Callable[[ClusterJob, dict[str, Any] | None], dict[str, Any]]
    state: Callable[[dict[str, Any]], tuple[str | None, str]]  # ("Succeeded" | "Failed" | None, why)
    pod_selector: Callable[[str], str]  # job name → label selector of its pods
    pod_replica: Callable[[Any], str]  # pod → `worker-1`
    # RBAC rules for the launcher's calls on this backend's objects (kflow manifests grants exactly these).
    rules: tuple[dict[str, Any], ...] = ()
    # Objects the job needs that outlive it (a TrainingRuntime): (group, version, plural, manifest).
    prerequisites: Callable[[ClusterJob], list[tuple[str, str, str, dict[str, Any]]]] = lambda job: []
