"""A node with parallel steps (pipeline/dsl/parallel_steps.py: a tuner's trials) → a `dsl.ParallelFor` of its step
tasks, at most `parallelism` at a time, then its gathering task, which stands for the node downstream.

The step and gathering tasks are never cached: the steps of a run ask a study made for that run, in a folder named
by the run's id (`{{$.pipeline_job_uuid}}`) on the shared volume mounted into each of them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kfp import dsl

from kflow.pipeline.compiler.component_builder import build_container_component
from kflow.pipeline.compiler.settings import KubeflowSettings
from kflow.pipeline.dsl.component import Component
from kflow.pipeline.dsl.parallel_steps import ParallelSteps


def parallel_steps_of(node: Component, settings: KubeflowSettings) -> ParallelSteps | None:
    offer = getattr(node, "parallel_steps", None)
    return offer(settings.cluster.shared_mount_path) if callable(offer) else None


def add_parallel_tasks(
    steps: ParallelSteps,
    settings: KubeflowSettings,
    tasks: dict[str, dsl.PipelineTask],
    typed: Callable[[Component, str, Any], Any],
    prepare: Callable[[dsl.PipelineTask, Component], None],
) -> dsl.PipelineTask:
    """Adds the loop of step tasks and the gathering task after it; returns the gathering task. `prepare(task,
    node)` gives a task its resources and the shared volume, as the builder does for its own."""
    run_id = {steps.run_parameter: dsl.PIPELINE_JOB_ID_PLACEHOLDER}

    def arguments(node: Component) -> dict[str, Any]:
        found = {name: tasks[channel.producer].outputs[channel.output] for name, channel in node.inputs.items()}
        found.update({name: typed(node, name, value) for name, value in node.parameters.items() if value is not None})
        return {**found, **run_id}

    step_component = build_container_component(steps.step, settings)
    gather_component = build_container_component(steps.gather, settings)
    step_arguments = arguments(steps.step)
    with dsl.ParallelFor(list(range(steps.count)), parallelism=steps.parallelism) as index:
        step = step_component(**{**step_arguments, steps.index_parameter: index})
        step.set_caching_options(False)
        prepare(step, steps.step)
    gather = gather_component(**arguments(steps.gather)).after(step)
    gather.set_caching_options(False)
    prepare(gather, steps.gather)
    return gather
