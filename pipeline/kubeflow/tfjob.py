"""Multi-process training on a cluster as a Kubeflow Training Operator `TFJob` or `JAXJob` (kubeflow.org/v1).

A TensorFlow strategy runs as a TFJob; a JAX strategy (the Keras distribution API, the explicit
JAX loop) as a JAXJob (Training Operator ≥ 1.9): Worker replicas only, worker 0 serving the JAX
coordinator, the operator injecting `COORDINATOR_ADDRESS`, `COORDINATOR_PORT`, `NUM_PROCESSES`
and `PROCESS_ID` (`operator_jax_environment` shows them) and the pods running with
`KERAS_BACKEND=jax`. Both kinds come from the same template's pod spec.

`render_tfjob` turns deploy/tfjob.template.yaml into the manifest of one job whose replicas
all run the same command in the same image, laid out like the Trainer's local cluster: the
node's roles (`Component.cluster_replicas`: chief, worker, ps, evaluator) become Chief,
Worker, PS and Evaluator replicas; the Chief, or worker 0 without one, writes the outputs.
The operator derives each replica's TF_CONFIG
(`operator_tf_config` shows what it will be). `wait_for_tfjob`
follows the job through the Kubernetes API, logs its pods' phases and, at the end,
their logs, and raises `TFJobFailed` when the job fails or times out; the launcher then
deletes it (`delete_tfjob`), as it does when it is itself terminated.
"""

from __future__ import annotations

import copy
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

log = logging.getLogger("kflow")

GROUP, VERSION, PLURAL = "kubeflow.org", "v1", "tfjobs"
JAX_PORT = 6666  # The JAXJob coordinator's default port.


@dataclass(frozen=True)
class JobKind:
    kind: str
    plural: str
    replica_specs: str  # the spec field holding the replicas
    container: str  # the container name the operator requires
    environment: tuple[tuple[str, str], ...] = ()


JOB_KINDS = {
    "TFJob": JobKind("TFJob", "tfjobs", "tfReplicaSpecs", "tensorflow"),
    "JAXJob": JobKind("JAXJob", "jaxjobs", "jaxReplicaSpecs", "jax", (("KERAS_BACKEND", "jax"),)),
}
DEFAULT_TEMPLATE = Path(__file__).resolve().parents[2] / "deploy" / "tfjob.template.yaml"
JOB_NAME_LABEL = "training.kubeflow.org/job-name"
PORT = 2222


class TFJobFailed(RuntimeError):
    pass


# TF_CONFIG task types and the TFJob replica types the Training Operator gives them.
REPLICA_TYPES = {"chief": "Chief", "worker": "Worker", "ps": "PS", "evaluator": "Evaluator"}


def tfjob_replicas(roles: dict[str, int]) -> dict[str, int]:
    """The TFJob's replicas for a cluster's roles ({"chief": 1, "worker": 2} → {"Chief": 1, "Worker": 2})."""
    unknown = set(roles) - set(REPLICA_TYPES)
    if unknown or not roles or min(roles.values()) < 1:
        raise ValueError(f"roles must map {', '.join(REPLICA_TYPES)} to counts ≥ 1 (got {roles})")
    return {REPLICA_TYPES[role]: count for role, count in roles.items()}


def writer_pod(name: str, replicas: dict[str, int]) -> str:
    """The pod whose outputs are the job's: the Chief if there is one, else worker 0."""
    return f"{name}-chief-0" if replicas.get("Chief") else f"{name}-worker-0"


@dataclass(frozen=True)
class TFJobRequest:
    name: str
    namespace: str
    image: str
    command: list[str]  # Kubernetes expands $(POD_NAME) in it.
    replicas: dict[str, int]
    shared_volume_claim: str = "kflow-shared"
    shared_mount_path: str = "/mnt/kflow-shared"
    service_account: str | None = None
    resources: dict[str, Any] = field(default_factory=dict)  # Kubernetes `resources` of every replica.
    kind: str = "TFJob"
    # Per replica type (Chief, Worker, …): its container's `resources`, its pod's `nodeSelector` and `tolerations`.
    pod_settings: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in JOB_KINDS:
            raise ValueError(f"kind must be one of {', '.join(JOB_KINDS)} (got {self.kind!r})")
        if self.kind == "JAXJob" and set(self.replicas) != {"Worker"}:
            raise ValueError(f"a JAXJob has Worker replicas only (got {self.replicas})")
        unknown = set(self.replicas) - set(REPLICA_TYPES.values())
        if unknown or not self.replicas or min(self.replicas.values()) < 1:
            raise ValueError(
                f"replicas must map {'/'.join(REPLICA_TYPES.values())} to counts ≥ 1 (got {self.replicas})"
            )
        if not self.command:
            raise ValueError("the replicas' command must not be empty")
        if set(self.pod_settings) - set(self.replicas):
            raise ValueError(f"pod settings for {sorted(set(self.pod_settings) - set(self.replicas))}: not replicas")


def render_tfjob(request: TFJobRequest, template: Path = DEFAULT_TEMPLATE) -> dict[str, Any]:
    """The TFJob or JAXJob manifest for `request`, built from the template's pod spec."""
    manifest = yaml.safe_load(Path(template).read_text())
    replica_template = manifest["spec"].pop("tfReplicaSpecs").pop("Worker")
    job = JOB_KINDS[request.kind]
    manifest["kind"] = job.kind
    manifest["metadata"]["name"] = request.name
    manifest["metadata"]["namespace"] = request.namespace
    replicas = {}
    for replica_type, count in request.replicas.items():
        spec = copy.deepcopy(replica_template)
        spec["replicas"] = count
        pod = spec["template"]["spec"]
        if request.service_account:
            pod["serviceAccountName"] = request.service_account
        (container,) = [c for c in pod["containers"] if c["name"] == "tensorflow"]
        container["name"] = job.container
        container["env"] = [*container.get("env", []), *({"name": k, "value": v} for k, v in job.environment)]
        if job.kind == "JAXJob":
            container["ports"] = [{"name": "jaxjob-port", "containerPort": JAX_PORT}]
        container["image"] = request.image
        container["command"] = list(request.command)
        own = request.pod_settings.get(replica_type, {})
        container["resources"] = copy.deepcopy(own.get("resources", request.resources))
        if own.get("nodeSelector"):
            pod["nodeSelector"] = dict(own["nodeSelector"])
        if own.get("tolerations"):
            pod["tolerations"] = copy.deepcopy(own["tolerations"])
        for mount in container.get("volumeMounts", []):
            if mount["name"] == "kflow-shared":
                mount["mountPath"] = request.shared_mount_path
        for volume in pod.get("volumes", []):
            if volume["name"] == "kflow-shared":
                volume["persistentVolumeClaim"]["claimName"] = request.shared_volume_claim
        replicas[replica_type] = spec
    manifest["spec"][job.replica_specs] = replicas
    return manifest


def operator_jax_environment(manifest: dict[str, Any], index: int) -> dict[str, str]:
    """The variables the Training Operator injects into JAXJob worker `index` (worker 0 is the coordinator)."""
    workers = manifest["spec"]["jaxReplicaSpecs"]["Worker"]["replicas"]
    if not 0 <= index < workers:
        raise ValueError(f"the job has {workers} workers, not a worker {index}")
    return {
        "COORDINATOR_ADDRESS": f"{manifest['metadata']['name']}-worker-0",
        "COORDINATOR_PORT": str(JAX_PORT),
        "NUM_PROCESSES": str(workers),
        "PROCESS_ID": str(index),
    }


def operator_tf_config(manifest: dict[str, Any], replica_type: str, index: int) -> dict[str, Any]:
    """The TF_CONFIG the Training Operator injects into replica `index` of `replica_type`."""
    name, namespace = manifest["metadata"]["name"], manifest["metadata"]["namespace"]
    cluster = {  # The Evaluator is no part of the training cluster: the operator leaves it out.
        kind.lower(): [f"{name}-{kind.lower()}-{i}.{namespace}.svc:{PORT}" for i in range(spec["replicas"])]
        for kind, spec in manifest["spec"]["tfReplicaSpecs"].items()
        if kind != "Evaluator"
    }
    if replica_type not in manifest["spec"]["tfReplicaSpecs"]:
        raise ValueError(f"the job has no {replica_type} replicas")
    return {"cluster": cluster, "task": {"type": replica_type.lower(), "index": index}, "environment": "cloud"}


def job_state(job: dict[str, Any]) -> str | None:
    """`Succeeded` or `Failed` once the job finished (its last true condition), else None."""
    for condition in reversed(job.get("status", {}).get("conditions", [])):
        if condition.get("status") == "True" and condition.get("type") in ("Succeeded", "Failed"):
            return condition["type"]
    return None


def create_tfjob(custom_api: Any, manifest: dict[str, Any]) -> dict[str, Any]:
    namespace, plural = manifest["metadata"]["namespace"], JOB_KINDS[manifest["kind"]].plural
    return custom_api.create_namespaced_custom_object(GROUP, VERSION, namespace, plural, manifest)


def delete_tfjob(custom_api: Any, name: str, namespace: str, kind: str = "TFJob") -> bool:
    """Deletes the job and, in the background, its pods and services; False (logged) if the API refused."""
    try:
        custom_api.delete_namespaced_custom_object(
            GROUP, VERSION, namespace, JOB_KINDS[kind].plural, name, propagation_policy="Background"
        )
    except Exception as error:  # Already gone, or no permission: say so, the caller is failing anyway.
        log.warning("could not delete %s %s/%s: %s", kind, namespace, name, error)
        return False
    log.info("deleted %s %s/%s", kind, namespace, name)
    return True


def wait_for_tfjob(
    custom_api: Any,
    core_api: Any,
    name: str,
    namespace: str,
    timeout: float,
    poll_seconds: float = 10.0,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    kind: str = "TFJob",
) -> dict[str, Any]:
    """Waits until the TFJob `name` finished; returns it, or raises TFJobFailed (failure or timeout).

    `custom_api` is a kubernetes.client.CustomObjectsApi and `core_api` a CoreV1Api (or
    stand-ins with the same methods). Pod phases are logged when they change, and every
    pod's log is logged at the end, so the KFP task's log tells what happened.
    """
    deadline = clock() + timeout
    phases: dict[str, str] = {}
    while True:
        job = custom_api.get_namespaced_custom_object(GROUP, VERSION, namespace, JOB_KINDS[kind].plural, name)
        pods = core_api.list_namespaced_pod(namespace, label_selector=f"{JOB_NAME_LABEL}={name}").items
        for pod in pods:
            if phases.get(pod.metadata.name) != pod.status.phase:
                phases[pod.metadata.name] = pod.status.phase
                log.info("%s %s: pod %s is %s", kind, name, pod.metadata.name, pod.status.phase)
        state = job_state(job)
        if state is not None or clock() >= deadline:
            break
        sleep(poll_seconds)
    for pod in pods:
        try:
            text = core_api.read_namespaced_pod_log(pod.metadata.name, namespace, tail_lines=200)
        except Exception as error:  # A pod that never started has no log; say so and go on.
            text = f"(no log: {error})"
        log.info("%s %s: log of %s:\n%s", kind, name, pod.metadata.name, text)
    if state == "Succeeded":
        return job
    failed = sorted(pod.metadata.name for pod in pods if pod.status.phase == "Failed")
    if state == "Failed":
        message = json.dumps(job.get("status", {}).get("conditions", [])[-1:])
        raise TFJobFailed(f"{kind} {namespace}/{name} failed (failed pods: {failed or 'none'}): {message}")
    raise TFJobFailed(f"{kind} {namespace}/{name} did not finish within {timeout:.0f} s (pod phases: {phases})")
