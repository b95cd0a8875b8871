"""STAND-INs for the Kubeflow Trainer v2.3.0 and JobSet controllers (TrainJob + runtime → the pods they would make) and
the Training Operator's (a TFJob/JAXJob → its pods).

NOT the Trainer: what it does, it does as the controllers' code at v2.3.0 (kubeflow/trainer, JobSet v0.12)
reads, for the fields kflow uses, so that tests can see the pods, their host names and their
environment exactly as a cluster would make them:

- Trainer (`pkg/runtime/core/trainingruntime.go`, `plugins/plainml`, `plugins/jax`, `plugins/jobset`): the
  TrainJob's `runtimePatches` merged into the runtime's JobSet template (lists keyed by `name`); the
  replicated job labelled `trainjob-ancestor-step: trainer` gets one Job of `trainer.numNodes` pods
  (else `mlPolicy.numNodes`), and its `node` container the TrainJob's image, command, args, env and
  `resourcesPerNode`; under `mlPolicy.jax` the JAX variables `JAX_NUM_PROCESSES`, `JAX_PROCESS_ID`
  (from the completion index) and `JAX_COORDINATOR_ADDRESS` (`<job>-node-0-0.<job>:29500`) and port 29500;
  other replicated jobs keep their template's parallelism.
- JobSet (`jobset_controller.go`, webhooks): Indexed Jobs `<jobset>-<replicated job>-<job index>`, pods
  labelled and annotated with `jobset.sigs.k8s.io/*` (the restart attempt too), in the subdomain `<jobset>`.
- Kubernetes' Job controller: pod host name `<job>-<completion index>`, the
  `batch.kubernetes.io/job-completion-index` annotation and label, and `JOB_COMPLETION_INDEX`.
- The kubelet: Downward API `fieldRef`s and `$(VAR)` references resolved in each container's environment.
"""

from __future__ import annotations

import copy
import json
import re
import secrets
from dataclasses import dataclass, field
from typing import Any

ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
TRAINER_PORT = 29500


def pod_phase(exit_code: int | None, stopped: bool) -> str:
    """A pod's phase as the kubelet reports it: Running until its container exits, then Succeeded (exit 0, not
    stopped by a delete) or Failed."""
    if exit_code is None:
        return "Running"
    return "Succeeded" if exit_code == 0 and not stopped else "Failed"


@dataclass
class Pod:
    name: str
    namespace: str
    hostname: str
    subdomain: str
    replicated_job: str
    index: int
    labels: dict[str, str]
    annotations: dict[str, str]
    spec: dict[str, Any]
    uid: str = field(default_factory=lambda: secrets.token_hex(8))

    @property
    def fqdn_short(self) -> str:
        """`<hostname>.<subdomain>`: what other pods of the namespace resolve."""
        return f"{self.hostname}.{self.subdomain}"

    def environment(self, container: int = 0) -> dict[str, str]:
        """The container's environment as the kubelet resolves it (fieldRefs, then `$(VAR)` references)."""
        resolved: dict[str, str] = {}
        for variable in self.spec["containers"][container].get("env", []):
            if "valueFrom" in variable:
                value = self._field(variable["valueFrom"]["fieldRef"]["fieldPath"])
            else:
                value = re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", lambda m: resolved.get(m[1], m[0]), variable["value"])
            resolved[variable["name"]] = value
        return resolved

    def _field(self, path: str) -> str:
        simple = {"metadata.name": self.name, "metadata.namespace": self.namespace, "metadata.uid": self.uid}
        if path in simple:
            return simple[path]
        if path == "spec.serviceAccountName":
            return self.spec.get("serviceAccountName", "default")
        match = re.fullmatch(r"metadata\.(labels|annotations)\['([^']+)'\]", path)
        if not match:
            raise ValueError(f"the stand-in kubelet does not resolve the field {path!r}")
        source = self.labels if match[1] == "labels" else self.annotations
        return source.get(match[2], "")


def _merge(base: Any, patch: Any) -> Any:
    """A strategic merge as the Trainer applies runtime patches: maps merge, lists of named items merge by name."""
    if isinstance(base, dict) and isinstance(patch, dict):
        merged = dict(base)
        for key, value in patch.items():
            merged[key] = _merge(base[key], value) if key in base else copy.deepcopy(value)
        return merged
    if isinstance(base, list) and isinstance(patch, list) and all(isinstance(i, dict) and "name" in i for i in base):
        merged = [copy.deepcopy(item) for item in base]
        for item in patch:
            found = next((i for i, old in enumerate(merged) if old["name"] == item["name"]), None)
            if found is None:
                merged.append(copy.deepcopy(item))
            else:
                merged[found] = _merge(merged[found], item)
        return merged
    return copy.deepcopy(patch)


def _upsert_env(container: dict[str, Any], variables: list[dict[str, Any]]) -> None:
    env = container.setdefault("env", [])
    for variable in variables:
        env[:] = [old for old in env if old["name"] != variable["name"]] + [copy.deepcopy(variable)]


def jobset_spec(trainjob: dict[str, Any], runtime: dict[str, Any]) -> dict[str, Any]:
    """The JobSet spec the Trainer creates for `trainjob` on `runtime`."""
    name = trainjob["metadata"]["name"]
    spec = copy.deepcopy(runtime["spec"]["template"]["spec"])
    for patch in trainjob["spec"].get("runtimePatches", []):
        spec = _merge(spec, patch["trainingRuntimeSpec"]["template"]["spec"])
    policy = runtime["spec"].get("mlPolicy", {})
    trainer = trainjob["spec"].get("trainer", {})
    for rjob in spec["replicatedJobs"]:
        job = rjob["template"]["spec"]
        pod = job["template"]["spec"]
        count = job.get("parallelism", 1)
        if rjob["template"].get("metadata", {}).get("labels", {}).get(ANCESTOR) == "trainer":
            count = trainer.get("numNodes", policy.get("numNodes", 1))
            rjob["replicas"] = 1
            for container in pod["containers"]:
                if container["name"] != "node":
                    continue
                for key in ("image", "command", "args"):
                    if key in trainer:
                        container[key] = copy.deepcopy(trainer[key])
                if "resourcesPerNode" in trainer:
                    container["resources"] = _merge(container.get("resources", {}), trainer["resourcesPerNode"])
                if "jax" in policy:
                    _upsert_env(
                        container,
                        [
                            {"name": "JAX_NUM_PROCESSES", "value": str(count)},
                            {
                                "name": "JAX_PROCESS_ID",
                                "valueFrom": {"fieldRef": {"fieldPath": f"metadata.annotations['{COMPLETION_INDEX}']"}},
                            },
                            {"name": "JAX_COORDINATOR_ADDRESS", "value": f"{name}-node-0-0.{name}:{TRAINER_PORT}"},
                        ],
                    )
                    ports = container.setdefault("ports", [])
                    if all(port["containerPort"] != TRAINER_PORT for port in ports):
                        ports.append({"containerPort": TRAINER_PORT})
                _upsert_env(container, trainer.get("env", []))
        job["parallelism"] = job["completions"] = count
        job.setdefault("completionMode", "Indexed")
        for container in pod["containers"]:
            _upsert_env(  # The Job controller's variable for Indexed Jobs.
                container,
                [
                    {
                        "name": "JOB_COMPLETION_INDEX",
                        "valueFrom": {"fieldRef": {"fieldPath": f"metadata.annotations['{COMPLETION_INDEX}']"}},
                    }
                ],
            )
    spec.setdefault("network", {}).setdefault("enableDNSHostnames", True)
    return spec


def jobset_pods(name: str, namespace: str, spec: dict[str, Any], restart_attempt: int = 0) -> list[Pod]:
    """The pods of JobSet `name` (the TrainJob's name) at a restart attempt, as JobSet and the Job controller make."""
    subdomain = spec.get("network", {}).get("subdomain") or name
    pods = []
    for rjob in spec["replicatedJobs"]:
        for job_index in range(rjob.get("replicas", 1)):
            job_name = f"{name}-{rjob['name']}-{job_index}"
            template = rjob["template"]["spec"]["template"]
            for index in range(rjob["template"]["spec"]["parallelism"]):
                jobset = {
                    "jobset.sigs.k8s.io/jobset-name": name,
                    "jobset.sigs.k8s.io/replicatedjob-name": rjob["name"],
                    "jobset.sigs.k8s.io/job-index": str(job_index),
                    "jobset.sigs.k8s.io/restart-attempt": str(restart_attempt),
                    "batch.kubernetes.io/job-name": job_name,
                    COMPLETION_INDEX: str(index),
                }
                pods.append(
                    Pod(
                        name=f"{job_name}-{index}-{secrets.token_hex(3)[:5]}",
                        namespace=namespace,
                        hostname=f"{job_name}-{index}",
                        subdomain=subdomain,
                        replicated_job=rjob["name"],
                        index=index,
                        labels={**template.get("metadata", {}).get("labels", {}), **jobset},
                        annotations={**template.get("metadata", {}).get("annotations", {}), **jobset},
                        spec=copy.deepcopy(template["spec"]),
                    )
                )
    return pods


def operator_pods(manifest: dict[str, Any]) -> list[Pod]:
    """The pods the Training Operator makes for a TFJob/JAXJob, with the variables it sets."""
    from kflow.pipeline.kubeflow.tfjob import operator_jax_environment, operator_tf_config

    name, namespace = manifest["metadata"]["name"], manifest["metadata"]["namespace"]
    jax = manifest["kind"] == "JAXJob"
    pods = []
    for replica_type, spec in manifest["spec"]["jaxReplicaSpecs" if jax else "tfReplicaSpecs"].items():
        for index in range(spec["replicas"]):
            environment = (
                operator_jax_environment(manifest, index)
                if jax
                else {"TF_CONFIG": json.dumps(operator_tf_config(manifest, replica_type, index))}
            )
            pod_spec = json.loads(json.dumps(spec["template"]["spec"]))
            container = pod_spec["containers"][0]
            container["env"] = [*container.get("env", []), *({"name": k, "value": v} for k, v in environment.items())]
            labels = {
                "training.kubeflow.org/job-name": name,
                "training.kubeflow.org/replica-type": replica_type.lower(),
                "training.kubeflow.org/replica-index": str(index),
            }
            pod_name = f"{name}-{replica_type.lower()}-{index}"
            pods.append(Pod(pod_name, namespace, pod_name, "", replica_type.lower(), index, labels, {}, pod_spec))
    return pods
