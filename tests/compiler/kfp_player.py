"""Plays a compiled pipeline.yaml locally: a test harness, not a KFP backend.

It reads the KFP v2 IR, walks the root DAG in dependency order and, for every task,
resolves the placeholders of its container's command and args the way the KFP
launcher does — artifact paths to local folders, parameters to their constants'
text — then runs the command as a subprocess in this environment (the image's
`python` replaced by `sys.executable`). What it proves: the compiled commands,
their arguments and the entrypoint really run the pipeline.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

_PLACEHOLDER = re.compile(r"\{\{\$\.(inputs|outputs)\.(artifacts|parameters)\['([^']+)'\](\.path)?\}\}")


def parameter_text(value: Any, parameter_type: str) -> str:
    """How the launcher substitutes a parameter value into a command line."""
    if parameter_type == "STRING":
        return value
    if parameter_type == "NUMBER_INTEGER":
        return str(int(value))
    if parameter_type == "NUMBER_DOUBLE":
        return repr(float(value))
    if parameter_type == "BOOLEAN":
        return "true" if value else "false"
    return json.dumps(value, separators=(",", ":"))


def task_order(dag: dict[str, Any]) -> list[str]:
    tasks = dag["tasks"]
    order: list[str] = []
    while len(order) < len(tasks):
        ready = [n for n, t in tasks.items() if n not in order and set(t.get("dependentTasks", [])) <= set(order)]
        if not ready:
            raise ValueError(f"cycle among {sorted(set(tasks) - set(order))}")
        order.extend(sorted(ready))
    return order


def play(package_path: Path, root: Path, cwd: Path, timeout: float = 900) -> dict[str, dict[str, Path]]:
    """Runs every task of the compiled pipeline; returns {task: {output: local path}}."""
    ir = yaml.safe_load(package_path.read_text())
    dag = ir["root"]["dag"]
    outputs: dict[str, dict[str, Path]] = {}
    for task_name in task_order(dag):
        task = dag["tasks"][task_name]
        component = ir["components"][task["componentRef"]["name"]]
        container = ir["deploymentSpec"]["executors"][component["executorLabel"]]["container"]
        parameter_types = {
            name: spec["parameterType"]
            for name, spec in component.get("inputDefinitions", {}).get("parameters", {}).items()
        }
        inputs = task.get("inputs", {})
        artifact_paths = {
            name: outputs[ref["taskOutputArtifact"]["producerTask"]][ref["taskOutputArtifact"]["outputArtifactKey"]]
            for name, ref in inputs.get("artifacts", {}).items()
        }
        parameters = {
            name: parameter_text(ref["runtimeValue"]["constant"], parameter_types[name])
            for name, ref in inputs.get("parameters", {}).items()
        }
        outputs[task_name] = {
            name: root / task_name / name for name in component.get("outputDefinitions", {}).get("artifacts", {})
        }

        values = {("parameters", name): value for name, value in parameters.items()}
        values.update({("inputs", name): str(path) for name, path in artifact_paths.items()})
        values.update({("outputs", name): str(path) for name, path in outputs[task_name].items()})

        def resolve(match: re.Match, values: dict = values) -> str:
            direction, kind, name, _ = match.groups()
            return values["parameters" if kind == "parameters" else direction, name]

        command = [_PLACEHOLDER.sub(resolve, part) for part in container["command"] + container.get("args", [])]
        leftover = [part for part in command if "{{$" in part]
        if leftover:
            raise ValueError(f"task {task_name}: unresolved placeholders {leftover}")
        if command[0] == "python":
            command[0] = sys.executable
        result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout)
        if result.returncode != 0:
            raise RuntimeError(f"task {task_name} exited {result.returncode}:\n{result.stderr[-4000:]}")
    return outputs
