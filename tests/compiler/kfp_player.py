"""Plays a compiled pipeline.yaml locally: a test harness, not a KFP backend.

It reads the KFP v2 IR, walks the root DAG in dependency order and, for every task,
builds the executor input and resolves the placeholders of its container's command
with KFP's own local-execution helpers (`kfp.local`: the same code `kfp.local`'s
runners use) — artifact URIs to local folders, parameters to their constants,
`{{$}}` to the executor input — then runs the command as a subprocess in this
environment (the image's `python` replaced by `sys.executable`) and reads the task's
outputs back, metadata included, from its executor output as KFP does. What it
proves: the compiled commands, their arguments and the entrypoint really run the pipeline.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml
from google.protobuf import json_format
from kfp import dsl
from kfp.local import executor_input_utils, executor_output_utils, placeholder_utils
from kfp.pipeline_spec import pipeline_spec_pb2


def task_order(dag: dict[str, Any]) -> list[str]:
    tasks = dag["tasks"]
    order: list[str] = []
    while len(order) < len(tasks):
        ready = [n for n, t in tasks.items() if n not in order and set(t.get("dependentTasks", [])) <= set(order)]
        if not ready:
            raise ValueError(f"cycle among {sorted(set(tasks) - set(order))}")
        order.extend(sorted(ready))
    return order


def play(package_path: Path, root: Path, cwd: Path, timeout: float = 900) -> dict[str, dict[str, dsl.Artifact]]:
    """Runs every task of the compiled pipeline; returns {task: {output: KFP artifact}} (`.path`, `.metadata`)."""
    ir = yaml.safe_load(package_path.read_text())
    dag = ir["root"]["dag"]
    outputs: dict[str, dict[str, dsl.Artifact]] = {}
    for task_name in task_order(dag):
        task = dag["tasks"][task_name]
        component = json_format.ParseDict(
            ir["components"][task["componentRef"]["name"]], pipeline_spec_pb2.ComponentSpec()
        )
        container = ir["deploymentSpec"]["executors"][component.executor_label]["container"]
        inputs = task.get("inputs", {})
        arguments: dict[str, Any] = {
            name: outputs[ref["taskOutputArtifact"]["producerTask"]][ref["taskOutputArtifact"]["outputArtifactKey"]]
            for name, ref in inputs.get("artifacts", {}).items()
        }
        arguments.update({name: ref["runtimeValue"]["constant"] for name, ref in inputs.get("parameters", {}).items()})
        task_root = root / task_name
        executor_input = executor_input_utils.construct_executor_input(
            component, arguments, str(task_root), block_input_artifact=False
        )
        command = placeholder_utils.replace_placeholders(
            container["command"] + container.get("args", []),
            executor_input_utils.executor_input_to_dict(executor_input, component),
            pipeline_resource_name=ir["pipelineInfo"]["name"],
            task_resource_name=task_name,
            pipeline_root=str(root),
            unique_pipeline_id="play",
        )
        leftover = [part for part in command if "{{$" in part]
        if leftover:
            raise ValueError(f"task {task_name}: unresolved placeholders {leftover}")
        if command[0] == "python":
            command[0] = sys.executable
        task_root.mkdir(parents=True, exist_ok=True)
        result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout)
        if result.returncode != 0:
            raise RuntimeError(f"task {task_name} exited {result.returncode}:\n{result.stderr[-4000:]}")
        reported = executor_output_utils.get_outputs_for_task(executor_input, component)
        outputs[task_name] = {
            name: reported.get(name) or executor_output_utils.artifact_list_to_dsl_artifact(artifacts, False)
            for name, artifacts in executor_input.outputs.artifacts.items()
        }
    return outputs
