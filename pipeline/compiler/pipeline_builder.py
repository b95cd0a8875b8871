"""A kflow `Pipeline` (a DAG of component nodes) → a KFP pipeline → `pipeline.yaml` (KFP v2 IR).

One KFP task per node, named after the node (`ingest`, `train`, `evaluate`); artifacts
flow along the DAG's channels; parameters are the config's values, baked in as
constants; caching and resource requests come from the `kubeflow` settings.
"""

from __future__ import annotations

from pathlib import Path

from kfp import compiler, dsl
from kfp.dsl.graph_component import GraphComponent

from kflow.pipeline.compiler.component_builder import build_container_component
from kflow.pipeline.compiler.settings import KubeflowSettings, Resources
from kflow.pipeline.dsl.dag import Pipeline


def build_kfp_pipeline(pipeline: Pipeline, settings: KubeflowSettings) -> GraphComponent:
    nodes = pipeline.topological_order()
    components = {node.id: build_container_component(node, settings) for node in nodes}

    def body():  # KFP reads the return annotation: none here, as the pipeline has no outputs.
        tasks: dict[str, dsl.PipelineTask] = {}
        for node in nodes:
            arguments = {name: tasks[channel.producer].outputs[channel.output] for name, channel in node.inputs.items()}
            arguments.update({name: value for name, value in node.parameters.items() if value is not None})
            task = components[node.id](**arguments)
            task.set_caching_options(settings.caching)
            _apply_resources(task, settings.resources_for(node.id))
            if node.cluster_replicas():
                # The launcher shares artifacts with the TFJob's replicas through this volume. This is the
                # platform config kfp-kubernetes' `mount_pvc` writes (the compiler emits it as a PlatformSpec).
                task.platform_config = {
                    "kubernetes": {
                        "pvcMount": [
                            {
                                "constant": settings.tfjob.shared_volume_claim,
                                "mountPath": settings.tfjob.shared_mount_path,
                            }
                        ]
                    }
                }
            tasks[node.id] = task

    body.__name__ = pipeline.name.replace("-", "_")
    description = f"kflow pipeline {pipeline.name!r}: {' -> '.join(node.id for node in nodes)}"
    return dsl.pipeline(name=pipeline.name, description=description)(body)


def compile_pipeline(
    pipeline: Pipeline,
    settings: KubeflowSettings,
    package_path: str | Path,
) -> Path:
    """Writes the KFP v2 IR YAML of `pipeline` to `package_path` and returns the path."""
    package_path = Path(package_path)
    package_path.parent.mkdir(parents=True, exist_ok=True)
    compiler.Compiler().compile(build_kfp_pipeline(pipeline, settings), str(package_path))
    return package_path


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
        task.set_accelerator_type(resources.gpu_type)
        task.set_accelerator_limit(resources.gpu)
