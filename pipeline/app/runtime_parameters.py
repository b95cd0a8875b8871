"""`kubeflow.parameters`: config fields that become inputs of the compiled pipeline, changeable per run.

    kubeflow:
      parameters: [trainer.epochs, trainer.optimizer.learning_rate, data.source.path]

Each named field is a pipeline-level input of `pipeline.yaml` (`trainer_epochs`, …) whose default
is the config's value and which feeds the node parameter the field sets, so the KFP UI, `kfp run
create … trainer_epochs=5` and `kflow submit --set trainer.epochs=5` change it without a recompile.
A field is a standard pipeline's section field or, in a declared pipeline,
`components.<id>.parameters.<name>`.
"""

from __future__ import annotations

import re
from typing import Any

from kflow.pipeline.app.sections import node_parameter
from kflow.pipeline.dsl.config import ConfigError, PipelineConfig, did_you_mean, read_value
from kflow.pipeline.dsl.dag import Pipeline
from kflow.pipeline.dsl.secrets import credential_fields


def input_name(field: str) -> str:
    """The pipeline input of a config field: `trainer.optimizer.learning_rate` → `trainer_optimizer_learning_rate`."""
    return re.sub(r"[^A-Za-z0-9_]", "_", field)


def pipeline_parameter(field: str, config: PipelineConfig) -> tuple[str, str] | None:
    """(node id, parameter) that `field` sets, or None when it sets none."""
    parts = field.split(".")
    if config.components is not None:
        if len(parts) == 4 and parts[0] == "components" and parts[2] == "parameters":
            return parts[1], parts[3]
        return None
    return node_parameter(field)


def runtime_parameters(config: PipelineConfig, pipeline: Pipeline, fields: list[str]) -> dict[tuple[str, str], str]:
    """{(node id, parameter): pipeline input name} for `kubeflow.parameters`; a ConfigError names bad entries."""
    found: dict[tuple[str, str], str] = {}
    problems = []
    nodes = {node.id: node for node in pipeline.components}
    for index, field in enumerate(fields):
        where = f"kubeflow.parameters[{index}]"
        target = pipeline_parameter(field, config)
        if target is None or target[0] not in nodes or target[1] not in nodes[target[0]].parameters:
            form = "components.<id>.parameters.<name>" if config.components is not None else "e.g. trainer.epochs"
            problems.append(f"{where}: {field!r} sets no component parameter of this pipeline ({form})")
        elif nodes[target[0]].parameters[target[1]] is None:
            problems.append(f"{where}: {field} has no value in the config; give it one, the run's default")
        elif target in found:
            problems.append(f"{where}: {field} is listed twice")
        else:
            found[target] = input_name(field)
    if problems:
        raise ConfigError(problems, config.source)
    return found


def run_arguments(overrides: list[str], fields: list[str]) -> tuple[list[str], dict[str, Any]]:
    """`--set` overrides split into those that recompile and the run arguments of run-time parameters."""
    compile_overrides, arguments = [], {}
    for override in overrides:
        key, _, text = override.partition("=")
        if key in fields:
            arguments[input_name(key)] = read_value(text)
        else:
            compile_overrides.append(override)
    return compile_overrides, arguments


def kubeflow_section_problems(config: PipelineConfig, pipeline: Pipeline, section: Any) -> list[str]:
    """What `kflow compile` refuses in a `kubeflow` section (its resources of a node the pipeline lacks, run-time
    parameters that set nothing), one line each: `kflow validate` says them too, before anyone compiles."""
    ids = [node.id for node in pipeline.components]
    problems = [
        f"kubeflow.resources.{name}: no component {name!r} in the pipeline{did_you_mean(name, ids)} "
        f"(components: {', '.join(ids)})"
        for name in section.resources
        if name not in ids
    ]
    try:
        runtime_parameters(config, pipeline, section.parameters)
    except ConfigError as error:
        problems += error.problems
    return problems


def compile_only_problems(config: PipelineConfig) -> list[str]:
    """What `kflow compile` refuses that `kflow run` takes: credentials (not written into pipeline.yaml) and a warm
    start from a run or folder of this machine. `kflow validate` says them as notes where the config has a
    `kubeflow` section."""
    problems = [
        f"{field}: a credential is not compiled into pipeline.yaml (everyone who can read the pipeline or its runs "
        "could read it): give it to the tasks as an environment variable from a Kubernetes Secret"
        for field in credential_fields(config)
    ]
    warm_start = config.trainer.warm_start if config.components is None else None
    if warm_start not in (None, "none", "latest_blessed"):  # a run id or a folder: resolved by kflow run only
        named = f"the model folder {warm_start}" if "/" in warm_start else f"run {warm_start!r}, one of this machine's"
        problems.append(
            f"trainer.warm_start: {named}, is resolved by kflow run only; a compiled pipeline's Trainer would not "
            "find it ('was not resolved to a model'): compile with trainer.warm_start: none, or latest_blessed "
            "(trains from scratch there)"
        )
    return problems
