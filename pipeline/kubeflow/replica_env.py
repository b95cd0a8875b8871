"""Who a training replica is, read from the variables its pod gets, as the Trainer's processes need it.

Every replica of a cluster job runs `kflow.pipeline.kubeflow.replica`, which calls
`replica_from_environment` and starts the entrypoint with the returned variables. Three cluster
backends set different variables; the Trainer reads one set (`TF_CONFIG` for TensorFlow strategies;
`COORDINATOR_ADDRESS`, `COORDINATOR_PORT`, `NUM_PROCESSES`, `PROCESS_ID` for JAX ones, as its
local launcher sets them):

- a Kubeflow Trainer v2 `TrainJob` (the default): its JobSet gives each pod a stable host name
  `<job>-<replicated job>-<job index>-<pod index>` under the subdomain `<job>`, and kflow's runtime
  passes the pod's JobSet labels and Indexed Job index in as variables (`TRAINJOB_VARIABLES`).
  TensorFlow: kflow builds `TF_CONFIG` from them (the replicated job names the role: `chief`,
  `worker`, `ps`, `evaluator`; the counts come from `KFLOW_REPLICAS`, which the launcher sets).
  JAX: Trainer v2's JAX policy sets `JAX_NUM_PROCESSES`, `JAX_PROCESS_ID` and
  `JAX_COORDINATOR_ADDRESS`, which kflow renames.
- a Training Operator v1 `TFJob`: the operator sets `TF_CONFIG` itself.
- a Training Operator v1 `JAXJob`: the operator sets the `COORDINATOR_*` variables itself.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

TF_PORT = 2222  # Where each TensorFlow replica's gRPC server listens (the TFJob convention).
JAX_PORT = 29500  # Trainer v2's trainer port: its JAX policy puts the coordinator there.
JAX_TRAINER_JOB = "node"  # Trainer v2's JAX policy names the coordinator `<job>-node-0-0`: the job must be `node`.
ROLES = ("chief", "worker", "ps", "evaluator")  # TF_CONFIG task types, in the order a cluster lists them.

# The variables kflow's TrainingRuntime gives every container, from the pod's own metadata (Downward API).
TRAINJOB_VARIABLES = {
    "KFLOW_JOB_NAME": "metadata.labels['jobset.sigs.k8s.io/jobset-name']",
    "KFLOW_REPLICATED_JOB": "metadata.labels['jobset.sigs.k8s.io/replicatedjob-name']",
    "KFLOW_RESTART_ATTEMPT": "metadata.labels['jobset.sigs.k8s.io/restart-attempt']",
    "KFLOW_POD_INDEX": "metadata.annotations['batch.kubernetes.io/job-completion-index']",
}
REPLICAS_VARIABLE = "KFLOW_REPLICAS"  # {replicated job: pods}, set by the launcher in the TrainJob.


class ReplicaEnvironmentError(ValueError):
    pass


@dataclass(frozen=True)
class Replica:
    """One process of a training cluster: its role, its index in the role, and the variables that tell it so."""

    role: str
    index: int
    environment: dict[str, str] = field(default_factory=dict)
    backend: str = ""  # trainjob | tfjob | jaxjob, for the log line

    @property
    def name(self) -> str:
        """`worker-1`: stable across restarts, the name of the replica's own output folder."""
        return f"{self.role}-{self.index}"


def trainjob_host(job: str, replicated_job: str, pod_index: int) -> str:
    """A TrainJob pod's host name as its JobSet publishes it (job index 0: kflow's jobs have one Job each)."""
    return f"{job}-{replicated_job}-0-{pod_index}.{job}"


def trainjob_tf_config(environment: Mapping[str, str]) -> dict:
    """TF_CONFIG of a TensorFlow replica of a TrainJob, from its variables (see the module docstring)."""
    job, role, index = _require(environment, "KFLOW_JOB_NAME", "KFLOW_REPLICATED_JOB", "KFLOW_POD_INDEX")
    replicas = _replicas(environment)
    if role not in ROLES:
        raise ReplicaEnvironmentError(f"replicated job {role!r} is no TensorFlow role ({', '.join(ROLES)})")
    if role not in replicas or not 0 <= int(index) < replicas[role]:
        raise ReplicaEnvironmentError(f"{role} {index} is not in {REPLICAS_VARIABLE}={json.dumps(replicas)}")
    # The evaluator reads the cluster's checkpoints but is no member of it (as with a TFJob's Evaluator).
    cluster = {
        name: [f"{trainjob_host(job, name, i)}:{TF_PORT}" for i in range(replicas[name])]
        for name in ROLES
        if name in replicas and name != "evaluator"
    }
    return {"cluster": cluster, "task": {"type": role, "index": int(index)}}


def trainjob_jax_environment(environment: Mapping[str, str]) -> dict[str, str]:
    """The Trainer's JAX variables from those Trainer v2's JAX policy sets."""
    count, index, coordinator = _require(environment, "JAX_NUM_PROCESSES", "JAX_PROCESS_ID", "JAX_COORDINATOR_ADDRESS")
    host, _, port = coordinator.rpartition(":")
    if not host or not port.isdigit():
        raise ReplicaEnvironmentError(f"JAX_COORDINATOR_ADDRESS must be HOST:PORT (got {coordinator!r})")
    return {"COORDINATOR_ADDRESS": host, "COORDINATOR_PORT": port, "NUM_PROCESSES": count, "PROCESS_ID": index}


def replica_from_environment(environment: Mapping[str, str]) -> Replica:
    """This replica, from whichever backend's variables the pod has."""
    if "JAX_NUM_PROCESSES" in environment:
        jax = trainjob_jax_environment(environment)
        return Replica("worker", int(jax["PROCESS_ID"]), jax, "trainjob")
    if "KFLOW_JOB_NAME" in environment:
        config = trainjob_tf_config(environment)
        task = config["task"]
        return Replica(task["type"], task["index"], {"TF_CONFIG": json.dumps(config)}, "trainjob")
    if "TF_CONFIG" in environment:
        task = json.loads(environment["TF_CONFIG"]).get("task") or {}
        return Replica(task.get("type", "worker"), int(task.get("index", 0)), {}, "tfjob")
    if "PROCESS_ID" in environment:
        return Replica("worker", int(environment["PROCESS_ID"]), {}, "jaxjob")
    raise ReplicaEnvironmentError(
        "no cluster variables: expected a TrainJob's (KFLOW_JOB_NAME or JAX_NUM_PROCESSES), "
        "a TFJob's (TF_CONFIG) or a JAXJob's (PROCESS_ID)"
    )


def _replicas(environment: Mapping[str, str]) -> dict[str, int]:
    (text,) = _require(environment, REPLICAS_VARIABLE)
    try:
        replicas = json.loads(text)
        if not isinstance(replicas, dict) or not all(isinstance(n, int) and n >= 1 for n in replicas.values()):
            raise ValueError("not an object of counts ≥ 1")
    except ValueError as error:
        raise ReplicaEnvironmentError(f"{REPLICAS_VARIABLE}={text!r}: {error}") from None
    return replicas


def _require(environment: Mapping[str, str], *names: str) -> tuple[str, ...]:
    missing = [name for name in names if not environment.get(name)]
    if missing:
        raise ReplicaEnvironmentError(f"missing {', '.join(missing)} (the pod's cluster variables)")
    return tuple(environment[name] for name in names)
