"""Where this process sits in a training cluster, read from its environment: a TFJob's or a local launcher's
`TF_CONFIG`, a JAXJob's `PROCESS_ID` / `NUM_PROCESSES`. Standard library only: the Trainer decides whether it
launches a local cluster, and a launched process which role it has, before either loads TensorFlow.
"""

from __future__ import annotations

import json
import os
from typing import Any


def tf_config() -> dict[str, Any]:
    raw = os.environ.get("TF_CONFIG")
    return json.loads(raw) if raw else {}


def is_chief(config: dict[str, Any]) -> bool:
    """Kubeflow/Keras convention: the `chief` task, else worker 0 when the cluster has no chief."""
    task = config.get("task") or {}
    cluster = config.get("cluster") or {}
    if not task:
        return True
    kind, index = task.get("type"), int(task.get("index", 0))
    if kind == "chief":
        return True
    return kind == "worker" and index == 0 and "chief" not in cluster


def in_cluster() -> bool:
    """Whether this process is one of a cluster's: a TFJob's (TF_CONFIG) or a JAXJob's (NUM_PROCESSES)."""
    return bool(os.environ.get("TF_CONFIG") or os.environ.get("NUM_PROCESSES"))


def replica_name() -> str:
    """This process's place in its cluster: `worker-1`, `chief-0` (TF_CONFIG), `worker-<id>` (JAX)."""
    if os.environ.get("PROCESS_ID") is not None:
        return f"worker-{os.environ['PROCESS_ID']}"
    task = tf_config().get("task") or {}
    return f"{task.get('type', 'worker')}-{task.get('index', 0)}"


def is_chief_process() -> bool:
    """The process that writes the outputs: process 0 of a JAX cluster, else the TF_CONFIG chief."""
    if os.environ.get("PROCESS_ID") is not None:
        return int(os.environ["PROCESS_ID"]) == 0
    return is_chief(tf_config())
