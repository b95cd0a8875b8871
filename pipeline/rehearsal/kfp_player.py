"""Plays a compiled pipeline.yaml locally: KFP's driver and launcher as a STAND-IN, not a KFP backend.

It reads the KFP v2 IR, walks the root DAG in dependency order and, for every task,
builds the executor input and resolves the placeholders of its container's command
with KFP's own local-execution helpers (`kfp.local`: the same code `kfp.local`'s
runners use) — artifact URIs to local folders, parameters to their constants,
`{{$}}` to the executor input — then runs the command — as a subprocess in this
environment (`ProcessTasks`: the image's `python` replaced by `sys.executable`), or as a container of the task's
image (`ContainerTasks`: podman, as a pod runs it) — and reads the task's
outputs back, metadata and output parameters included, from its executor output as KFP
does. Condition groups (`dsl.If`) are played when their condition on an upstream output
parameter holds, skipped otherwise. Given a `cache` (a dict kept across plays), it reuses a task's
outputs the way KFP's cache does: same component, same arguments (artifacts by URI), caching enabled
on the task. A PVC that the platform spec mounts into a task is a folder `volumes/<claim>`: the task's
command sees that folder where it names the mount path (a container has it mounted there). What it proves:
the compiled commands, their arguments and the entrypoint really run the pipeline.
"""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import yaml
from google.protobuf import json_format
from kfp.local import executor_input_utils, executor_output_utils, placeholder_utils
from kfp.pipeline_spec import pipeline_spec_pb2

from kflow.pipeline.rehearsal.container_pods import RehearsalCluster, pod_fields
from kflow.pipeline.rehearsal.podman import ContainerSpec, Mount, Podman, owned_by_user


@dataclass
class Task:
    """One task to run: its resolved command line and where its files are."""

    name: str
    command: list[str]
    container: dict[str, Any]  # the executor's `container` in the IR: image, env, resources
    root: Path  # the play's pipeline root (every artifact is under it)
    volumes: dict[
        str, str
    ]  # {mount path: local folder} of the PVCs the platform spec mounts (the folder named as its claim)
    fields: dict[str, str] = field(default_factory=dict)  # {variable: pod field}: the platform spec's fieldPathAsEnv


class TaskRunner(Protocol):
    def run(self, task: Task, cwd: Path, timeout: float) -> subprocess.CompletedProcess: ...


class ProcessTasks:
    """Each task a process of this environment; a PVC's mount path in its command is its local folder."""

    def run(self, task: Task, cwd: Path, timeout: float) -> subprocess.CompletedProcess:
        command = list(task.command)
        if command[0] == "python":
            command[0] = sys.executable
        for mount_path, folder in task.volumes.items():
            command = [part.replace(mount_path, folder) for part in command]
        return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def _quantity(value: Any, scale: float = 1.0) -> float | None:
    return None if value in (None, "") else float(value) * scale


class ContainerTasks:
    """Each task a container of its image, as KFP's launcher runs it in a pod (and as `kfp.local.DockerRunner` does):
    the pipeline root mounted at its own path (KFP's DockerRunner mounts it so; artifacts keep their paths), each PVC
    at its mount path, the container's env, its CPU and memory limits, and the pod's restrictions (podman.py).
    `inputs` are host paths mounted read-only at their own paths (data the tasks read: on a cluster, the shared
    volume or a bucket)."""

    def __init__(
        self, podman: Podman, inputs: list[Path] | None = None, cluster: RehearsalCluster | None = None
    ) -> None:
        self.podman, self.inputs, self.cluster = podman, list(inputs or []), cluster

    def run(self, task: Task, cwd: Path, timeout: float) -> subprocess.CompletedProcess:
        resources = task.container.get("resources", {})
        owned_by_user([task.root / task.name, *map(Path, task.volumes.values())])
        name = f"kflow-{self.podman.rehearsal}-{task.name}"
        fields = pod_fields(name)
        settings = self.cluster.task_settings(task.root.parent) if self.cluster else {}
        if self.cluster:  # The claims as the named volumes the replicas mount too.
            volumes = [Mount(self.cluster.volumes[Path(folder).name], path) for path, folder in task.volumes.items()]
        else:
            volumes = [Mount(folder, path) for path, folder in task.volumes.items()]
        spec = ContainerSpec(
            image=task.container["image"],
            command=task.command,
            name=name,
            env={
                **{variable["name"]: str(variable.get("value", "")) for variable in task.container.get("env", [])},
                **{variable: fields[path] for variable, path in task.fields.items()},
                **settings.get("env", {}),
            },
            mounts=[
                Mount(str(task.root), str(task.root)),
                *volumes,
                *(Mount(str(path), str(path), read_only=True) for path in self.inputs),
                *settings.get("mounts", []),
            ],
            cpus=_quantity(resources.get("cpuLimit")),
            memory_bytes=int(_quantity(resources.get("memoryLimit"), 1e9) or 0) or None,
            network=settings.get("network"),
        )
        return self.podman.run(spec, timeout)


def task_order(dag: dict[str, Any]) -> list[str]:
    tasks = dag["tasks"]
    order: list[str] = []
    while len(order) < len(tasks):
        ready = [n for n, t in tasks.items() if n not in order and set(t.get("dependentTasks", [])) <= set(order)]
        if not ready:
            raise ValueError(f"cycle among {sorted(set(tasks) - set(order))}")
        order.extend(sorted(ready))
    return order


@dataclass
class _Run:
    """What one play shares across its tasks."""

    ir: dict[str, Any]
    root: Path
    cwd: Path
    timeout: float
    cache: dict[str, dict[str, Any]] | None
    mounts: dict[str, dict[str, str]]  # {executor label: {mount path: local folder}}
    fields: dict[str, dict[str, str]]  # {executor label: {variable: pod field}}
    tasks: TaskRunner = field(default_factory=ProcessTasks)
    outputs: dict[str, dict[str, Any]] = field(default_factory=dict)


def play(
    package_path: Path,
    root: Path,
    cwd: Path,
    timeout: float = 900,
    arguments: dict[str, Any] | None = None,
    cache: dict[str, dict[str, Any]] | None = None,
    volumes: Path | None = None,
    tasks: TaskRunner | None = None,
) -> dict[str, dict[str, Any]]:
    """Runs every task of the compiled pipeline; returns {task: {output: KFP artifact or parameter value}}
    (artifacts have `.path` and `.metadata`). A `dsl.If` group whose condition is false is recorded as
    {"skipped": True}; the tasks of a group that ran appear by their own names; a task reused from `cache`
    has {"cached": True} beside its outputs. `volumes` (default `root/volumes`) holds the PVCs' folders; `tasks` runs
    each task (default: a process here, `ProcessTasks`)."""
    ir, *platform = yaml.safe_load_all(package_path.read_text())  # The second document is the platform spec.
    executors = (platform[0] or {}).get("platforms", {}).get("kubernetes", {}) if platform else {}
    volumes = volumes or root / "volumes"
    mounts = {
        label: {mount["mountPath"]: str(volumes / mount["constant"]) for mount in config.get("pvcMount", [])}
        for label, config in executors.get("deploymentSpec", {}).get("executors", {}).items()
    }
    # The run's arguments for the pipeline's own inputs, over their defaults (what `kfp run create` sends).
    declared = ir["root"].get("inputDefinitions", {}).get("parameters", {})
    unknown = set(arguments or {}) - set(declared)
    if unknown:
        raise ValueError(f"the pipeline has no inputs {sorted(unknown)} (inputs: {sorted(declared)})")
    scope = {name: spec.get("defaultValue") for name, spec in declared.items()}
    scope.update(arguments or {})
    fields = {
        label: {variable["name"]: variable["fieldPath"] for variable in config.get("fieldPathAsEnv", [])}
        for label, config in executors.get("deploymentSpec", {}).get("executors", {}).items()
    }
    run = _Run(ir, root.resolve(), cwd, timeout, cache, mounts, fields, tasks or ProcessTasks())
    _play_dag(run, ir["root"]["dag"], scope)
    return run.outputs


# `dsl.If(task.outputs[...] == "true")` compiles to this condition; the player evaluates only that form.
_CONDITION = re.compile(r"^inputs\.parameter_values\['([^']+)'\] == '([^']*)'$")


def _play_dag(run: _Run, dag: dict[str, Any], scope: dict[str, Any]) -> None:
    ir, outputs, cache = run.ir, run.outputs, run.cache
    for task_name in task_order(dag):
        task = dag["tasks"][task_name]
        component_ir = ir["components"][task["componentRef"]["name"]]
        arguments = _arguments(task.get("inputs", {}), scope, outputs)
        condition = task.get("triggerPolicy", {}).get("condition")
        if condition:
            match = _CONDITION.match(condition)
            if not match:
                raise ValueError(f"task {task_name}: the player cannot evaluate the condition {condition!r}")
            if str(arguments[match.group(1)]) != match.group(2):
                outputs[task_name] = {"skipped": True}
                continue
        if "parameterIterator" in task:  # A dsl.ParallelFor: its DAG once per item, parallelismLimit at a time.
            outputs[task_name] = {"iterations": _play_loop(run, task_name, task, component_ir["dag"], arguments)}
            continue
        if "dag" in component_ir:  # A condition group: play its tasks with its inputs in scope.
            outputs[task_name] = {}
            _play_dag(run, component_ir["dag"], arguments)
            continue
        key = _cache_key(ir, component_ir, arguments)
        if cache is not None and task.get("cachingOptions", {}).get("enableCache") and key in cache:
            outputs[task_name] = {**cache[key], "cached": True}
            continue
        outputs[task_name] = _run_task(run, task_name, component_ir, arguments)
        if cache is not None:
            cache[key] = outputs[task_name]


def _play_loop(run: _Run, task_name: str, task: dict[str, Any], dag: dict[str, Any], arguments: dict[str, Any]):
    """Plays a ParallelFor's DAG once per item of its static list (`items.raw`) or of an input list, as KFP does:
    each iteration with the item in scope under `itemInput`, its tasks in a folder of their own, at most
    `iteratorPolicy.parallelismLimit` iterations at a time (0 or none: all). Returns each iteration's outputs."""
    iterator = task["parameterIterator"]
    items = iterator["items"]
    values = json.loads(items["raw"]) if "raw" in items else arguments[items["inputParameter"]]
    limit = task.get("iteratorPolicy", {}).get("parallelismLimit") or len(values) or 1

    def iteration(index: int) -> dict[str, Any]:
        inner = dataclasses.replace(run, root=run.root / f"{task_name}-{index}", cache=None, outputs=dict(run.outputs))
        _play_dag(inner, dag, {**arguments, iterator["itemInput"]: values[index]})
        return {name: value for name, value in inner.outputs.items() if name not in run.outputs}

    with ThreadPoolExecutor(max_workers=limit) as pool:
        return list(pool.map(iteration, range(len(values))))


def _cache_key(ir, component_ir, arguments: dict[str, Any]) -> str:
    """What KFP's cache key holds: the component's interface and container, and the arguments (artifacts by URI)."""
    container = ir["deploymentSpec"]["executors"][component_ir.get("executorLabel", "")]["container"]
    values = {name: getattr(value, "uri", value) for name, value in arguments.items()}
    return json.dumps([component_ir, container, values], sort_keys=True, default=str)


def _arguments(inputs: dict[str, Any], scope: dict[str, Any], outputs) -> dict[str, Any]:
    arguments: dict[str, Any] = {}
    for name, ref in inputs.get("artifacts", {}).items():
        if "taskOutputArtifact" in ref:
            producer = ref["taskOutputArtifact"]
            arguments[name] = _output(outputs, producer["producerTask"], producer["outputArtifactKey"])
        else:
            arguments[name] = scope[ref["componentInputArtifact"]]
    for name, ref in inputs.get("parameters", {}).items():
        if "runtimeValue" in ref:
            arguments[name] = ref["runtimeValue"]["constant"]
        elif "taskOutputParameter" in ref:
            producer = ref["taskOutputParameter"]
            arguments[name] = _output(outputs, producer["producerTask"], producer["outputParameterKey"])
        else:
            arguments[name] = scope[ref["componentInputParameter"]]
    return arguments


def _output(outputs: dict[str, Any], task_name: str, key: str) -> Any:
    if key not in outputs[task_name]:  # KFP's local runner fails with this message too.
        raise ValueError(f"Tried to get output {key!r} from task {task_name!r}: the task did not report it")
    return outputs[task_name][key]


def task_command(package_path: Path, task_name: str, root: Path) -> list[str]:
    """The command line a root-DAG task of the compiled pipeline runs, its parameters given their defaults, as a
    KFP backend substitutes them (a struct or a list as JSON text); nothing is run."""
    ir = next(yaml.safe_load_all(package_path.read_text()))
    declared = ir["root"].get("inputDefinitions", {}).get("parameters", {})
    scope = {name: spec.get("defaultValue") for name, spec in declared.items()}
    task = ir["root"]["dag"]["tasks"][task_name]
    component_ir = ir["components"][task["componentRef"]["name"]]
    arguments = _arguments({"parameters": task.get("inputs", {}).get("parameters", {})}, scope, {})
    return _resolve(_Run(ir, root, root, 0, None, {}, {}), task_name, component_ir, arguments)[0]


def _resolve(run: _Run, task_name: str, component_ir, arguments) -> tuple[list[str], Any, Any]:
    """(the task's command with its placeholders resolved, its executor input, its component spec)."""
    component = json_format.ParseDict(component_ir, pipeline_spec_pb2.ComponentSpec())
    container = run.ir["deploymentSpec"]["executors"][component.executor_label]["container"]
    task_root = run.root / task_name
    executor_input = executor_input_utils.construct_executor_input(
        component, arguments, str(task_root), block_input_artifact=False
    )
    command = placeholder_utils.replace_placeholders(
        container["command"] + container.get("args", []),
        executor_input_utils.executor_input_to_dict(executor_input, component),
        pipeline_resource_name=run.ir["pipelineInfo"]["name"],
        task_resource_name=task_name,
        pipeline_root=str(run.root),
        unique_pipeline_id="play",
    )
    leftover = [part for part in command if "{{$" in part]
    if leftover:
        raise ValueError(f"task {task_name}: unresolved placeholders {leftover}")
    return command, executor_input, component


def _run_task(run: _Run, task_name: str, component_ir, arguments) -> dict[str, Any]:
    command, executor_input, component = _resolve(run, task_name, component_ir, arguments)
    task_root = run.root / task_name
    task_root.mkdir(parents=True, exist_ok=True)
    container = run.ir["deploymentSpec"]["executors"][component.executor_label]["container"]
    label = component.executor_label
    task = Task(task_name, command, container, run.root, run.mounts.get(label, {}), run.fields.get(label, {}))
    result = run.tasks.run(task, run.cwd, run.timeout)
    if result.returncode != 0:
        raise RuntimeError(f"task {task_name} exited {result.returncode}:\n{result.stderr[-4000:]}")
    # As KFP's launcher (and kfp.local): a task's outputs are what its executor output file (and its output
    # parameters' files) report, nothing more; an output the task did not report fails the task that reads it.
    return executor_output_utils.get_outputs_for_task(executor_input, component)
