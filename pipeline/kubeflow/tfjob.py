"""A multi-process Trainer as a Kubeflow Training Operator v1 job (`kubeflow.org/v1`), for clusters that still run it.

Kubeflow's community distribution removed the Training Operator after 26.03.1; `kubeflow.training:
tfjob` keeps it for clusters that have it. A TensorFlow strategy runs as a `TFJob` (the cluster's
roles become Chief, Worker, PS and Evaluator replicas; the operator sets each pod's TF_CONFIG), a
JAX strategy as a `JAXJob` (Worker replicas; the operator sets `COORDINATOR_ADDRESS`,
`COORDINATOR_PORT`, `NUM_PROCESSES`, `PROCESS_ID`). Every replica runs kflow's replica command
with the entrypoint in `KFLOW_ENTRYPOINT`, in the pod settings of `cluster_job`.
`trainer.max_restarts` becomes the job's `backoffLimit` with restart policy `ExitCode`: the
operator restarts a replica killed by a signal (preemption, OOM) and fails the job on an error.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from kflow.pipeline.kubeflow.cluster_job import (
    PART_OF,
    REPLICA_COMMAND,
    ClusterJob,
    JobBackend,
    collective_ports,
    isolation_policy,
    replica_pod_spec,
)
from kflow.pipeline.kubeflow.replica import ENTRYPOINT_VARIABLE
from kflow.pipeline.kubeflow.replica_env import TF_PORT

GROUP, VERSION = "kubeflow.org", "v1"
JAXJOB_PORT = 6666  # The JAXJob coordinator's default port.
JOB_NAME_LABEL = "training.kubeflow.org/job-name"


@dataclass(frozen=True)
class JobKind:
    kind: str
    plural: str
    replica_specs: str  # the spec field holding the replicas
    container: str  # the container name the operator requires
    port: tuple[str, int]


JOB_KINDS = {
    "tensorflow": JobKind("TFJob", "tfjobs", "tfReplicaSpecs", "tensorflow", ("tfjob-port", TF_PORT)),
    "jax": JobKind("JAXJob", "jaxjobs", "jaxReplicaSpecs", "jax", ("jaxjob-port", JAXJOB_PORT)),
}
# TF_CONFIG task types and the replica types the Training Operator gives them.
REPLICA_TYPES = {"chief": "Chief", "worker": "Worker", "ps": "PS", "evaluator": "Evaluator"}


def render_tfjob(job: ClusterJob, owner: dict[str, Any] | None = None) -> dict[str, Any]:
    """The TFJob (or, for a JAX cluster, JAXJob) of the job."""
    kind = JOB_KINDS[job.framework]
    replica_specs = {}
    for role in job.roles:
        env = [{"name": ENTRYPOINT_VARIABLE, "value": json.dumps(job.entrypoint)}]
        if job.framework == "jax":
            env.append({"name": "KERAS_BACKEND", "value": "jax"})
        container = {
            "name": kind.container,
            "image": job.image,
            "command": list(REPLICA_COMMAND),
            "env": env,
            "ports": [{"name": kind.port[0], "containerPort": kind.port[1]}],
        }
        replica_specs[REPLICA_TYPES[role]] = {
            "replicas": job.replicas[role],
            "restartPolicy": "ExitCode" if job.max_restarts else "Never",
            "template": {
                "metadata": {"labels": dict(PART_OF), "annotations": {"sidecar.istio.io/inject": "false"}},
                "spec": replica_pod_spec(job, role, container),
            },
        }
    metadata: dict[str, Any] = {"name": job.name, "namespace": job.namespace, "labels": dict(PART_OF)}
    if owner:
        metadata["ownerReferences"] = [owner]
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": kind.kind,
        "metadata": metadata,
        "spec": {
            "runPolicy": {
                # When the job ends, stop the pods still running (a PS cluster's workers and parameter servers serve
                # until stopped; no GPU stays held) and keep the finished ones, whose logs can be read.
                "cleanPodPolicy": "Running",
                "backoffLimit": job.max_restarts,
                "activeDeadlineSeconds": job.deadline_seconds,
            },
            kind.replica_specs: replica_specs,
        },
    }


def render_network_policy(job: ClusterJob, owner: dict[str, Any] | None = None) -> dict[str, Any]:
    ports = collective_ports(job.framework, JOB_KINDS[job.framework].port[1])
    policy = isolation_policy(job.name, job.namespace, {JOB_NAME_LABEL: job.name}, ports)
    if owner:
        policy["metadata"]["ownerReferences"] = [owner]
    return policy


def operator_jax_environment(manifest: dict[str, Any], index: int) -> dict[str, str]:
    """The variables the Training Operator injects into JAXJob worker `index` (worker 0 is the coordinator)."""
    workers = manifest["spec"]["jaxReplicaSpecs"]["Worker"]["replicas"]
    if not 0 <= index < workers:
        raise ValueError(f"the job has {workers} workers, not a worker {index}")
    return {
        "COORDINATOR_ADDRESS": f"{manifest['metadata']['name']}-worker-0",
        "COORDINATOR_PORT": str(JAXJOB_PORT),
        "NUM_PROCESSES": str(workers),
        "PROCESS_ID": str(index),
    }


def operator_tf_config(manifest: dict[str, Any], replica_type: str, index: int) -> dict[str, Any]:
    """The TF_CONFIG the Training Operator injects into replica `index` of `replica_type`."""
    name, namespace = manifest["metadata"]["name"], manifest["metadata"]["namespace"]
    specs = manifest["spec"]["tfReplicaSpecs"]
    if replica_type not in specs:
        raise ValueError(f"the job has no {replica_type} replicas")
    cluster = {  # The Evaluator is no part of the training cluster: the operator leaves it out.
        kind.lower(): [f"{name}-{kind.lower()}-{i}.{namespace}.svc:{TF_PORT}" for i in range(spec["replicas"])]
        for kind, spec in specs.items()
        if kind != "Evaluator"
    }
    return {"cluster": cluster, "task": {"type": replica_type.lower(), "index": index}, "environment": "cloud"}


def tfjob_state(job: dict[str, Any]) -> tuple[str | None, str]:
    """("Succeeded" | "Failed" | None while it runs, the deciding condition's reason and message)."""
    for condition in reversed(job.get("status", {}).get("conditions", [])):
        if condition.get("status") == "True" and condition.get("type") in ("Succeeded", "Failed"):
            return condition["type"], f"{condition.get('reason', '')}: {condition.get('message', '')}".strip(": ")
    return None, ""


def pod_replica(pod: Any) -> str:
    """`worker-1`: a TFJob pod's role and index, from the labels the operator sets."""
    labels = pod.metadata.labels or {}
    role = labels.get("training.kubeflow.org/replica-type", "?").lower()
    return f"{role}-{labels.get('training.kubeflow.org/replica-index', '?')}"


BACKEND = JobBackend(
    name="tfjob",
    group=GROUP,
    version=VERSION,
    plural=lambda job: JOB_KINDS[job.framework].plural,
    render=render_tfjob,
    network_policy=render_network_policy,
    state=tfjob_state,
    pod_selector=lambda name: f"{JOB_NAME_LABEL}={name}",
    pod_replica=pod_replica,
    rules=({"apiGroups": [GROUP], "resources": ["tfjobs", "jaxjobs"], "verbs": ["create", "get", "delete"]},),
)
