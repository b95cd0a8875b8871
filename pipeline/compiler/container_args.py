"""The command line a compiled task runs: the container entrypoint and its arguments.

Every task runs `python -m kflow.pipeline.runners.kfp_entrypoint` with the component's class
path, one `--input name=PATH` per input artifact, one `--output name=PATH` per output
artifact and one `--parameter name=VALUE` per parameter; KFP substitutes the
placeholders (`{{$.inputs.artifacts['examples'].path}}`, ...) at run time, and `--executor-input {{$}}`,
so that the task writes its executor output (the artifacts it produced) as KFP expects. A Trainer that
runs as a cluster runs the job launcher instead, with the same arguments after its own
options, so the job's replicas run the very same entrypoint.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from kfp import dsl

from kflow.pipeline.compiler.settings import KubeflowSettings, Resources
from kflow.pipeline.dsl.component import Component

ENTRYPOINT = ["python", "-m", "kflow.pipeline.runners.kfp_entrypoint"]
JOB_LAUNCHER = ["python", "-m", "kflow.pipeline.kubeflow.job_launcher"]
BASELINE_RESOLVER = ["python", "-m", "kflow.pipeline.kubeflow.baselines"]


def entrypoint_args(
    component_path: str,
    inputs: Mapping[str, Any],
    outputs: Mapping[str, Any],
    parameters: Mapping[str, Any],
) -> list[str]:
    """Arguments of the entrypoint; `inputs`/`outputs` hold KFP artifact channels, `parameters` placeholders."""
    args = ["--component", component_path]
    for name, artifact in inputs.items():
        args += ["--input", f"{name}={artifact.path}"]
    for name, artifact in outputs.items():
        args += ["--output", f"{name}={artifact.path}"]
    for name, placeholder in parameters.items():
        args += ["--parameter", f"{name}={placeholder}"]
    return args


def executor_input_args() -> list[str]:
    """The executor input `{{$}}`, which every task gets: the entrypoint writes its executor output where it says,
    the only place a KFP launcher (and `kfp.local`) takes the task's output artifacts from."""
    return ["--executor-input", dsl.PIPELINE_TASK_EXECUTOR_INPUT_PLACEHOLDER]


def metrics_publishing_args(evaluation_output: str, classification_output: str) -> list[str]:
    """Entrypoint options that publish an evaluation's metrics as KFP artifact metadata (in the executor output)."""
    return ["--publish-metrics", f"{evaluation_output}={classification_output}"]


def job_launcher_args(node: Component, settings: KubeflowSettings, entrypoint: list[str]) -> list[str]:
    """Options of the job launcher for `node`'s cluster, then `--` and the entrypoint each replica runs.

    The node's `kubeflow.resources` go to every replica (a role's overrides to that role's), as the
    containers' `resources`, `nodeSelector` and `tolerations`."""
    replicas = node.cluster_replicas()
    resources = settings.resources_for(node.id)
    pods = {role: pod_settings(resources.for_role(role)) for role in replicas}
    pods = {role: values for role, values in pods.items() if values}
    cluster = settings.cluster
    return [
        f"--job-prefix={node.id}",
        *(f"--replica={role}={count}" for role, count in replicas.items()),
        *([f"--pod-settings={json.dumps(pods, sort_keys=True)}"] if pods else []),
        f"--image={settings.image}",
        f"--namespace={settings.namespace}",
        f"--backend={settings.training}",
        f"--framework={node.cluster_framework()}",
        f"--shared-volume-claim={cluster.shared_volume_claim}",
        f"--shared-mount-path={cluster.shared_mount_path}",
        f"--timeout-seconds={cluster.timeout_seconds}",
        f"--service-account={cluster.service_account}",
        f"--max-restarts={node.cluster_restarts()}",
        "--",
        *entrypoint,
    ]


def pod_settings(resources: Resources) -> dict[str, Any]:
    """A training replica's container resources and where its pod may run, as cluster jobs take them."""
    found = {"resources": resources.kubernetes(), "nodeSelector": resources.node_selector}
    return {key: value for key, value in {**found, "tolerations": resources.tolerations}.items() if value}
