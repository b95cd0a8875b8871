"""A kflow `Pipeline` (a DAG of component nodes) → a KFP pipeline → `pipeline.yaml` (KFP v2 IR).

One KFP task per node, named after the node (`ingest`, `train`, `evaluate`); artifacts
flow along the DAG's channels; parameters are the config's values, baked in as
constants; caching, resource requests, node selectors and tolerations come from the
`kubeflow` settings (a node that runs a cluster job passes its resources on to the job's replicas). A node with
`run_if` runs inside a `dsl.If` on its blessing's verdict output. A node whose baseline is the latest
blessed model gets it from a resolver task run just before it (pipeline/kubeflow/baselines.py).
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path

from kfp import compiler, dsl, kubernetes
from kfp.dsl.graph_component import GraphComponent

from kflow.pipeline.compiler.component_builder import (
    SOURCE_FINGERPRINT,
    build_baseline_resolver,
    build_container_component,
    build_source_fingerprinter,
    verdict_output,
)
from kflow.pipeline.compiler.parallel_tasks import add_parallel_tasks, parallel_steps_of
from kflow.pipeline.compiler.settings import IMAGE_REQUIRED, LAUNCHER_RESOURCES, KubeflowSettings, Resources
from kflow.pipeline.dsl.artifacts import ModelEvaluation
from kflow.pipeline.dsl.component import Component
from kflow.pipeline.dsl.dag import Pipeline
from kflow.pipeline.kubeflow.baselines import gated_model_input, model_identity, store_path


def build_kfp_pipeline(
    pipeline: Pipeline,
    settings: KubeflowSettings,
    runtime_parameters: dict[tuple[str, str], str] | None = None,
    latest_blessed: dict[str, str] | None = None,
) -> GraphComponent:
    """`runtime_parameters` {(node id, parameter): input name}: node parameters fed by pipeline-level inputs
    (defaulting to the node's value) instead of constants, so that a run can change them.
    `latest_blessed` {node id: parameter}: a parameter fed at run time with the latest blessed model's URI
    (the Evaluator's `baseline_model_uri` under `evaluator.baseline: latest_blessed`)."""
    nodes = pipeline.topological_order()
    baselines = dict(latest_blessed or {})
    store = store_path(settings.cluster.shared_mount_path, pipeline.name)
    # What the models are trained for, as `kflow run` matches baselines: recorded with a blessed model, matched by the
    # resolver, so two configs of one name never take each other's baselines.
    config = pipeline.metadata.get("config") or {"name": pipeline.name}
    identity = json.dumps(model_identity(config, table=True), sort_keys=True)
    components = {
        node.id: build_container_component(
            node, settings, (baselines[node.id], store, identity) if node.id in baselines else None
        )
        for node in nodes
    }
    resolvers = {
        node: build_baseline_resolver(pipeline.node(node), store, settings.image, identity) for node in baselines
    }
    fingerprinters = {n.id: build_source_fingerprinter(n, settings.image) for n in nodes if n.spec.source_files}
    runtime = dict(runtime_parameters or {})
    inputs = {
        name: inspect.Parameter(
            name,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
            default=pipeline.node(node_id).parameters[parameter],
            annotation=pipeline.node(node_id).spec.parameters[parameter].type,
        )
        for (node_id, parameter), name in sorted(runtime.items(), key=lambda item: item[1])
    }
    conditions = _conditions(pipeline)

    def body(*pipeline_inputs):  # KFP reads the return annotation: none here, as the pipeline has no outputs.
        given = dict(zip(inputs, pipeline_inputs, strict=True))
        tasks: dict[str, dsl.PipelineTask] = {}

        def add_task(node: Component) -> None:
            steps = parallel_steps_of(node, settings)
            if steps is not None:  # a tuner's trials: a ParallelFor, then the task gathering them (parallel_tasks.py)
                tasks[node.id] = add_parallel_tasks(steps, settings, tasks, _typed, prepare_parallel)
                return
            arguments = {name: tasks[channel.producer].outputs[channel.output] for name, channel in node.inputs.items()}
            arguments.update(
                {name: _typed(node, name, value) for name, value in node.parameters.items() if value is not None}
            )
            arguments.update(
                {name: given[runtime[(node.id, name)]] for name in node.parameters if (node.id, name) in runtime}
            )
            if node.id in baselines:
                arguments[baselines[node.id]] = add_resolver(node).output
            if node.id in fingerprinters:
                arguments[SOURCE_FINGERPRINT] = add_fingerprinter(node, arguments).output
            task = components[node.id](**arguments)
            task.set_caching_options(settings.caching)
            if node.id in baselines:
                mount_shared_volume(task)
            if node.cluster_replicas():
                # The work is in the job's replicas (they get the node's resources through the launcher's
                # arguments); the task only launches and waits, and shares artifacts with them on this volume.
                # It names the job's owner: its own pod, so that the job goes when the task's pod goes.
                _apply_resources(task, LAUNCHER_RESOURCES)
                mount_shared_volume(task)
                for variable, field in LAUNCHER_POD_FIELDS.items():
                    kubernetes.use_field_path_as_env(task, variable, field)
            else:
                _apply_resources(task, settings.resources_for(node.id))
                _retry(task, settings.retries)
            if settings.mlflow and _evaluates(node):  # The MLflow run is named after the KFP run.
                kubernetes.use_field_path_as_env(task, RUN_ID_VARIABLE, RUN_ID_FIELD)
            tasks[node.id] = task

        def prepare_parallel(task: dsl.PipelineTask, node: Component) -> None:
            _apply_resources(task, settings.resources_for(node.id))
            mount_shared_volume(task)

        def add_fingerprinter(node: Component, arguments: dict) -> dsl.PipelineTask:
            """Never cached: it reads the data as it is now, so that the node's cache key holds its bytes."""
            parameters = {name: value for name, value in arguments.items() if name in node.spec.parameters}
            task = fingerprinters[node.id](**parameters)
            task.set_caching_options(False)
            _apply_resources(task, LAUNCHER_RESOURCES)
            _retry(task, settings.retries)
            return task

        def add_resolver(node: Component) -> dsl.PipelineTask:
            """Never cached: its answer depends on the runs before, not on its inputs."""
            model = node.inputs[gated_model_input(node.spec)]
            resolver = resolvers[node.id](model=tasks[model.producer].outputs[model.output])
            resolver.set_caching_options(False)
            _apply_resources(resolver, LAUNCHER_RESOURCES)
            _retry(resolver, settings.retries)
            mount_shared_volume(resolver)
            return resolver

        def mount_shared_volume(task: dsl.PipelineTask) -> None:
            if not task.platform_config.get("kubernetes", {}).get("pvcMount"):
                kubernetes.mount_pvc(
                    task, pvc_name=settings.cluster.shared_volume_claim, mount_path=settings.cluster.shared_mount_path
                )

        def add_group(key: tuple[tuple[str, str], ...]) -> None:
            """The nodes under exactly the conditions `key`, then each nested condition group once: KFP lets a
            task read a conditional task's outputs only from inside the same group."""
            for node in nodes:
                if conditions[node.id] == key:
                    add_task(node)
            nested = [conditions[n.id][: len(key) + 1] for n in nodes if conditions[n.id][: len(key)] == key]
            for child in dict.fromkeys(k for k in nested if len(k) > len(key)):
                producer, output = child[-1]
                verdict = tasks[producer].outputs[verdict_output(output)]
                with dsl.If(verdict == "true", name=f"{producer}-{output}-blessed"):
                    add_group(child)

        add_group(())

    body.__signature__ = inspect.Signature(list(inputs.values()))  # type: ignore[attr-defined]
    body.__name__ = pipeline.name.replace("-", "_")
    description = f"kflow pipeline {pipeline.name!r}: {' -> '.join(node.id for node in nodes)}"
    return dsl.pipeline(name=pipeline.name, description=description)(body)


def _conditions(pipeline: Pipeline) -> dict[str, tuple[tuple[str, str], ...]]:
    """Per node, the (producer, blessing output) pairs it runs under: its own `run_if` and those of the nodes
    whose outputs it consumes, ordered by where their producers are in the DAG (so groups nest the same way)."""
    order = {node.id: index for index, node in enumerate(pipeline.topological_order())}
    found: dict[str, tuple[tuple[str, str], ...]] = {}
    for node in pipeline.topological_order():
        pairs = {pair for producer in node.upstream for pair in found[producer]}
        if node.run_if:
            pairs.add((node.run_if.producer, node.run_if.output))
        found[node.id] = tuple(sorted(pairs, key=lambda pair: (order[pair[0]], pair[1])))
    return found


def compile_pipeline(
    pipeline: Pipeline,
    settings: KubeflowSettings,
    package_path: str | Path,
    runtime_parameters: dict[tuple[str, str], str] | None = None,
    latest_blessed: dict[str, str] | None = None,
) -> Path:
    """Writes the KFP v2 IR YAML of `pipeline` to `package_path` and returns the path."""
    if not settings.image:
        raise ValueError(IMAGE_REQUIRED)
    package_path = Path(package_path)
    package_path.parent.mkdir(parents=True, exist_ok=True)
    kfp_pipeline = build_kfp_pipeline(pipeline, settings, runtime_parameters, latest_blessed)
    compiler.Compiler().compile(kfp_pipeline, str(package_path))
    return package_path


# The launcher's own pod (Downward API), which owns the cluster job it creates.
LAUNCHER_POD_FIELDS = {
    "KFLOW_POD_NAME": "metadata.name",
    "KFLOW_POD_UID": "metadata.uid",
    "KFLOW_POD_NAMESPACE": "metadata.namespace",
}
# The KFP run a task belongs to (KFP's run-id label on every task pod), for the MLflow run of an evaluate task.
RUN_ID_VARIABLE, RUN_ID_FIELD = "KFLOW_KFP_RUN_ID", "metadata.labels['pipeline/runid']"


def _evaluates(node: Component) -> bool:
    return any(issubclass(kind, ModelEvaluation) for kind in node.spec.outputs.values())


def _typed(node: Component, name: str, value: object) -> object:
    """A whole number given for a float parameter (YAML's `60` for 60.0) as the float KFP's type check wants."""
    if node.spec.parameters[name].type is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def _retry(task: dsl.PipelineTask, retries: int) -> None:
    if retries:
        task.set_retry(retries, backoff_duration="30s", backoff_factor=2.0, backoff_max_duration="600s")


def _apply_resources(task: dsl.PipelineTask, resources: Resources) -> None:
    if resources.cpu:
        task.set_cpu_request(resources.cpu)
    if resources.cpu_limit:
        task.set_cpu_limit(resources.cpu_limit)
    if resources.memory:
        task.set_memory_request(resources.memory)
    if resources.memory_limit:
        task.set_memory_limit(resources.memory_limit)
    if resources.gpu:
        task.set_accelerator_type(resources.gpu_resource)
        task.set_accelerator_limit(resources.gpu)
    if resources.node_selector:
        kubernetes.add_node_selector_json(task, resources.node_selector)
    if resources.tolerations:
        kubernetes.add_toleration_json(task, resources.tolerations)
