"""The command line a compiled task runs: the container entrypoint and its arguments.

Every task runs `python -m kflow.pipeline.runners.kfp_entrypoint` with the component's class
path, one `--input name=PATH` per input artifact, one `--output name=PATH` per output
artifact and one `--parameter name=VALUE` per parameter; KFP substitutes the
placeholders (`{{$.inputs.artifacts['examples'].path}}`, ...) at run time. The Trainer
with several workers runs the TFJob launcher instead, with the same arguments after
its own options, so the TFJob replicas run the very same entrypoint.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from kfp import dsl

ENTRYPOINT = ["python", "-m", "kflow.pipeline.runners.kfp_entrypoint"]
TFJOB_LAUNCHER = ["python", "-m", "kflow.pipeline.kubeflow.tfjob_launcher"]
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


def metrics_publishing_args(evaluation_output: str, classification_output: str) -> list[str]:
    """Entrypoint options that publish an evaluation's metrics as KFP artifact metadata (needs the executor input)."""
    return [
        "--executor-input",
        dsl.PIPELINE_TASK_EXECUTOR_INPUT_PLACEHOLDER,
        "--publish-metrics",
        f"{evaluation_output}={classification_output}",
    ]


def tfjob_launcher_args(
    *,
    job_prefix: str,
    replicas: dict[str, int],
    image: str,
    namespace: str,
    shared_volume_claim: str,
    shared_mount_path: str,
    timeout_seconds: int,
    service_account: str,
    entrypoint: list[str],
    kind: str = "TFJob",
    pod_settings: dict[str, dict[str, Any]] | None = None,
) -> list[str]:
    """Options of the TFJob launcher, followed by `--` and the entrypoint arguments each replica runs.

    `pod_settings`: per role, the replicas' container `resources`, `nodeSelector` and `tolerations`."""
    settings = {role: values for role, values in (pod_settings or {}).items() if values}
    return [
        f"--job-prefix={job_prefix}",
        *(f"--replica={role}={count}" for role, count in replicas.items()),
        *([f"--pod-settings={json.dumps(settings, sort_keys=True)}"] if settings else []),
        f"--image={image}",
        f"--namespace={namespace}",
        f"--shared-volume-claim={shared_volume_claim}",
        f"--shared-mount-path={shared_mount_path}",
        f"--timeout-seconds={timeout_seconds}",
        f"--service-account={service_account}",
        *([f"--kind={kind}"] if kind != "TFJob" else []),
        "--",
        *entrypoint,
    ]
