"""A multi-process Trainer as a Kubeflow Trainer v2 `TrainJob` (trainer.kubeflow.org/v1alpha1, Trainer ≥ 2.3).

Trainer v2 runs a `TrainJob` from a runtime: a JobSet template whose replicated job labelled
`trainjob-ancestor-step: trainer` (container `node`) takes the TrainJob's node count, image and
variables. Its TensorFlow support is the plain-ML policy with your own `TF_CONFIG`
(kubeflow/trainer#2699), and one replicated job of identical nodes cannot say "chief, workers and
parameter servers". So kflow renders a runtime per cluster layout (`render_runtime`):

- one replicated job per role, named like the role (`chief`, `worker`, `ps`, `evaluator`): the
  `worker` job is the trainer step (its count is the TrainJob's `numNodes`), the others have fixed
  counts (Trainer v2 lets a TrainJob change only the trainer step's); a pod's role is its
  replicated job and its index the Indexed Job's completion index, so `replica_env` builds
  TF_CONFIG from the pod's JobSet labels and the stable host names `<job>-<role>-0-<i>.<job>`;
- a JAX cluster is the trainer step alone, named `node` as Trainer v2's JAX policy requires, which
  sets the JAX process variables itself;
- `failurePolicy.maxRestarts` is `trainer.max_restarts` (a failed pod restarts the whole group,
  which resumes from the last checkpoint on the shared volume); a cluster with a chief succeeds
  when the chief (and the sidecar evaluator) finish, and JobSet then stops the serving roles.

Everything that varies per config (image, counts, resources, restarts) is in the runtime, named
after its content (`kflow-<node>-<digest>`): the launcher creates it when it is missing, and
`kflow manifests` writes it for review. The `TrainJob` itself is small: the runtime's name, the
worker count, the entrypoint (`KFLOW_ENTRYPOINT`) and the layout (`KFLOW_REPLICAS`) as variables,
an active deadline and an owner.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from kflow.pipeline.kubeflow.cluster_job import (
    PART_OF,
    REPLICA_COMMAND,
    ClusterJob,
    JobBackend,
    collective_ports,
    digest,
    isolation_policy,
    job_name,
    replica_pod_spec,
)
from kflow.pipeline.kubeflow.replica import ENTRYPOINT_VARIABLE
from kflow.pipeline.kubeflow.replica_env import (
    JAX_PORT,
    JAX_TRAINER_JOB,
    REPLICAS_VARIABLE,
    TF_PORT,
)
from kflow.pipeline.kubeflow.replica_env import (
    TRAINJOB_VARIABLES as DOWNWARD,
)

GROUP, VERSION = "trainer.kubeflow.org", "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
ANCESTOR_LABEL = "trainjob-ancestor-step"
TRAINER_CONTAINER = "node"  # Trainer v2 applies the TrainJob's trainer settings to the container of this name.
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
PATCH_MANAGER = "kflow.dev/launcher"
DIGEST_ANNOTATION = "kflow.dev/runtime-sha256"
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"


def replicated_job(job: ClusterJob, role: str) -> str:
    """The runtime's replicated job of a role (a JAX cluster's workers are Trainer v2's `node`)."""
    return JAX_TRAINER_JOB if job.framework == "jax" else role


def _container_name(role: str) -> str:
    return TRAINER_CONTAINER if role == "worker" else role


def runtime_spec(job: ClusterJob) -> dict[str, Any]:
    """The TrainingRuntime's spec for the job's layout, image and settings (no per-run values)."""
    port = JAX_PORT if job.framework == "jax" else TF_PORT
    replicated_jobs = []
    for role in job.roles:
        env = [{"name": name, "valueFrom": {"fieldRef": {"fieldPath": field}}} for name, field in DOWNWARD.items()]
        if job.framework == "jax":
            env.append({"name": "KERAS_BACKEND", "value": "jax"})
        container = {
            "name": _container_name(role),
            "image": job.image,
            "command": list(REPLICA_COMMAND),
            "env": env,
            "ports": [{"name": "jax-coordinator" if job.framework == "jax" else "tf-grpc", "containerPort": port}],
        }
        count = job.replicas[role]
        labels = {**PART_OF, f"{GROUP}/{ANCESTOR_LABEL}": "trainer"} if role == "worker" else dict(PART_OF)
        replicated_jobs.append(
            {
                "name": replicated_job(job, role),
                "replicas": 1,
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "parallelism": count,
                        "completions": count,
                        "completionMode": "Indexed",
                        "backoffLimit": 0,  # A failed replica fails its Job; the JobSet's failure policy decides.
                        "template": {
                            "metadata": {
                                "labels": {**PART_OF, "app.kubernetes.io/component": "training-replica"},
                                # Replicas talk gRPC to each other; a mesh sidecar would sit in the way.
                                "annotations": {"sidecar.istio.io/inject": "false"},
                            },
                            "spec": replica_pod_spec(job, role, container),
                        },
                    },
                },
            }
        )
    jobset: dict[str, Any] = {
        "network": {"enableDNSHostnames": True, "publishNotReadyAddresses": True},
        "failurePolicy": {"maxRestarts": job.max_restarts, "restartStrategy": "Recreate"},
        "replicatedJobs": replicated_jobs,
    }
    if "chief" in job.replicas:  # Workers and parameter servers serve until stopped: the chief's end is the job's.
        jobset["successPolicy"] = {
            "operator": "All",
            "targetReplicatedJobs": [role for role in ("chief", "evaluator") if role in job.replicas],
        }
    policy: dict[str, Any] = {"numNodes": job.replicas["worker"]}
    if job.framework == "jax":
        policy["jax"] = {}
    return {"mlPolicy": policy, "template": {"spec": jobset}}


def runtime_name(job: ClusterJob) -> str:
    """`kflow-<node>-<first 10 hex digits of the runtime spec's SHA-256>`: a different layout, image or setting
    is a different runtime, so a job never runs on a runtime made for another config."""
    return job_name(f"kflow-{job.component}", digest(runtime_spec(job))[:10])


def render_runtime(job: ClusterJob) -> dict[str, Any]:
    spec = runtime_spec(job)
    return {
        "apiVersion": API_VERSION,
        "kind": "TrainingRuntime",
        "metadata": {
            "name": runtime_name(job),
            "namespace": job.namespace,
            "labels": {**PART_OF, f"{GROUP}/framework": job.framework},
            "annotations": {DIGEST_ANNOTATION: digest(spec)},
        },
        "spec": spec,
    }


def render_trainjob(job: ClusterJob, owner: dict[str, Any] | None = None) -> dict[str, Any]:
    """The TrainJob of one run on its runtime: the entrypoint and the layout as variables of every replica."""
    variables = [
        {"name": ENTRYPOINT_VARIABLE, "value": json.dumps(job.entrypoint)},
        {"name": REPLICAS_VARIABLE, "value": json.dumps({replicated_job(job, r): n for r, n in job.replicas.items()})},
    ]
    # Trainer v2 sets the trainer step's variables from `trainer.env`; the other roles' through a runtime patch.
    patches = [
        {
            "name": role,
            "template": {
                "spec": {"template": {"spec": {"containers": [{"name": role, "env": copy.deepcopy(variables)}]}}}
            },
        }
        for role in job.roles
        if role != "worker"
    ]
    spec: dict[str, Any] = {
        "runtimeRef": {"apiGroup": GROUP, "kind": "TrainingRuntime", "name": runtime_name(job)},
        "trainer": {"numNodes": job.replicas["worker"], "env": copy.deepcopy(variables)},
        "activeDeadlineSeconds": job.deadline_seconds,
    }
    if patches:
        spec["runtimePatches"] = [
            {"manager": PATCH_MANAGER, "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": patches}}}}
        ]
    metadata: dict[str, Any] = {"name": job.name, "namespace": job.namespace, "labels": dict(PART_OF)}
    if owner:
        metadata["ownerReferences"] = [owner]
    return {"apiVersion": API_VERSION, "kind": "TrainJob", "metadata": metadata, "spec": spec}


def render_network_policy(job: ClusterJob, owner: dict[str, Any] | None = None) -> dict[str, Any]:
    """Only the job's own pods may reach its replicas: a TensorFlow job's on its gRPC port only, a JAX job's on any
    TCP port (its gloo collectives connect to ephemeral ports besides the coordinator's 29500)."""
    ports = collective_ports(job.framework, JAX_PORT if job.framework == "jax" else TF_PORT)
    policy = isolation_policy(job.name, job.namespace, {JOBSET_NAME_LABEL: job.name}, ports)
    if owner:
        policy["metadata"]["ownerReferences"] = [owner]
    return policy


def trainjob_state(trainjob: dict[str, Any]) -> tuple[str | None, str]:
    """("Succeeded" | "Failed" | None while it runs, the deciding condition's reason and message)."""
    for condition in trainjob.get("status", {}).get("conditions", []):
        if condition.get("status") == "True" and condition.get("type") in ("Complete", "Failed"):
            state = "Succeeded" if condition["type"] == "Complete" else "Failed"
            return state, f"{condition.get('reason', '')}: {condition.get('message', '')}".strip(": ")
    return None, ""


def pod_replica(pod: Any) -> str:
    """`worker-1`: a TrainJob pod's role and index, from the labels JobSet and the Job controller set."""
    labels = pod.metadata.labels or {}
    annotations = pod.metadata.annotations or {}
    role = labels.get("jobset.sigs.k8s.io/replicatedjob-name", "?")
    index = annotations.get(COMPLETION_INDEX, labels.get(COMPLETION_INDEX, "?"))
    return f"{'worker' if role == JAX_TRAINER_JOB else role}-{index}"


BACKEND = JobBackend(
    name="trainjob",
    group=GROUP,
    version=VERSION,
    plural=lambda job: "trainjobs",
    render=render_trainjob,
    network_policy=render_network_policy,
    state=trainjob_state,
    pod_selector=lambda name: f"{JOBSET_NAME_LABEL}={name}",
    pod_replica=pod_replica,
    rules=(
        {"apiGroups": [GROUP], "resources": ["trainingruntimes"], "verbs": ["get", "create"]},
        {"apiGroups": [GROUP], "resources": ["trainjobs"], "verbs": ["create", "get", "delete"]},
    ),
    prerequisites=lambda job: [(GROUP, VERSION, "trainingruntimes", render_runtime(job))],
)
