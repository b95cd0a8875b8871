"""A pipeline declared under `components:` in the config: any DAG of kflow or user components.

    components:
      - {id: ingest, type: ingest}
      - id: train
        type: trainer
        inputs: {examples: ingest.examples, schema: ingest.schema}
        parameters: {epochs: 3}
      - {id: push, type: pusher, inputs: {model: train.model}, run_if: evaluate.blessing, ...}

A node's `type` is a kflow component (COMPONENT_TYPES) or a user's `package.module:Class`.
Its parameters start from the config's section for its type (`data` for `ingest`, `trainer`,
`evaluator`) and its own `parameters` override them. Every problem is reported at once, each
under its path in the file (`components.train.inputs.examples: …`), as `kflow validate` shows.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from kflow.components.datasets import DATASETS, get_dataset
from kflow.pipeline.app.config_checks import check_config
from kflow.pipeline.app.latest_blessed import latest_blessed
from kflow.pipeline.app.sections import (
    absolute,
    baseline_parameters,
    evaluator_parameters,
    ingest_parameters,
    trainer_parameters,
)
from kflow.pipeline.app.transform_section import transform_parameters
from kflow.pipeline.app.tuning import tuner_parameters
from kflow.pipeline.dsl.component import Channel, Component, load_component
from kflow.pipeline.dsl.config import ConfigError, PipelineConfig, did_you_mean
from kflow.pipeline.dsl.config_model import ComponentEntry, given
from kflow.pipeline.dsl.dag import Pipeline

# The kflow components a config names by type, besides `ingest` and `<dataset>_ingest` for each registered dataset.
COMPONENT_TYPES: dict[str, str] = {
    "trainer": "kflow.components.trainer:Trainer",
    "evaluator": "kflow.components.evaluator:Evaluator",
    "pusher": "kflow.components.pusher:Pusher",
    "bulk_inferrer": "kflow.components.bulk_inferrer:BulkInferrer",
    "predict": "kflow.components.predictor:Predictor",
    "statistics_gen": "kflow.components.statistics_gen:StatisticsGen",
    "schema_gen": "kflow.components.schema_gen:SchemaGen",
    "example_validator": "kflow.components.example_validator:ExampleValidator",
    "tuner": "kflow.components.tuner:Tuner",
    "transform": "kflow.components.transform:Transform",
}
# `ingest`: the ingest of the config's own dataset (data.dataset), with the data section as its parameters.
SECTION_DEFAULTS: dict[str, Callable[[PipelineConfig], dict[str, Any]]] = {
    "ingest": ingest_parameters,
    "trainer": trainer_parameters,
    "evaluator": evaluator_parameters,
    "tuner": tuner_parameters,
    "transform": transform_parameters,
    # data.on_anomaly, which the Trainer's refusal names as the way out (a user trial set it, and nothing changed)
    "example_validator": lambda config: (
        {"on_anomaly": config.data.on_anomaly} if config.data and config.data.on_anomaly else {}
    ),
}


def component_class(type_name: str, config: PipelineConfig) -> type[Component]:
    """The class a `type` names; ValueError with the choices when there is none."""
    if type_name == "ingest":
        if not config.data:
            raise ValueError("type ingest reads the data section, which this config lacks; name a dataset's ingest")
        return get_dataset(config.data.dataset).ingest_component()
    if type_name.endswith("_ingest") and type_name.removesuffix("_ingest") in DATASETS:
        return get_dataset(type_name.removesuffix("_ingest")).ingest_component()
    if type_name not in COMPONENT_TYPES and ":" not in type_name:
        known = ["ingest", *COMPONENT_TYPES, *(f"{name}_ingest" for name in DATASETS)]
        raise ValueError(
            f"unknown component type {type_name!r}{did_you_mean(type_name, known)} "
            f"(kflow types: {', '.join(known)}; a user component as package.module:Class)"
        )
    try:
        return load_component(COMPONENT_TYPES.get(type_name, type_name))
    except ImportError as error:
        hint = ""
        if isinstance(error, ModuleNotFoundError) and error.name and ":" in type_name:
            hint = (" (a user component's package is imported as Python imports it: installed, or its folder on "
                    "PYTHONPATH, e.g. PYTHONPATH=. kflow run …; the image a compiled pipeline runs must hold it "
                    "too)")  # fmt: skip
        raise ValueError(f"cannot import {type_name!r}: {error}{hint}") from None


def build_declared_pipeline(
    config: PipelineConfig, *, local_data: bool = True, pipeline_dir: Path | None = None
) -> Pipeline:
    """The DAG of `config.components`; one ConfigError lists every problem, each with its path. `pipeline_dir`
    (`kflow run`, `kflow plan`): where an evaluator's `evaluator.baseline: latest_blessed` is looked for."""
    if config.data:
        check_config(config, local_data=local_data)  # The sections are the nodes' defaults: they must be valid too.
    entries = list(config.components or [])
    ids = [entry.id for entry in entries]
    labels = [f"components.{i}" if ids.count(i) == 1 else f"components[{n}]" for n, i in enumerate(ids)]
    problems = [f"{labels[n]}.id: duplicate id {i!r}" for n, i in enumerate(ids) if ids.count(i) > 1]
    classes: dict[str, type[Component]] = {}
    for entry, label in zip(entries, labels, strict=True):
        try:
            classes[entry.id] = component_class(entry.type, config)
        except ValueError as error:
            problems.append(f"{label}.type: {error}")
    problems += _reference_problems(entries, labels)
    if problems:
        raise ConfigError(problems, config.source)
    by_id = {entry.id: (entry, label) for entry, label in zip(entries, labels, strict=True)}
    nodes: dict[str, Component] = {}
    for node_id in _dependency_order(entries):
        entry, label = by_id[node_id]
        node, node_problems = _build_node(entry, label, classes[node_id], nodes, config, pipeline_dir, local_data)
        problems += node_problems
        if node is not None:
            nodes[node_id] = node
    problems += _untagged_schema_problems(entries, labels, config)
    if problems:
        raise ConfigError(problems, config.source)
    return Pipeline(
        name=config.name,
        components=[nodes[i] for i in ids],
        beam_args=config.orchestration_args,
        metadata={"config": config.to_dict(), "config_file": config.source},
    )


# The kflow components that build the dataset's task from the schema they are given (its label, its types).
_TASK_READERS = ("transform", "trainer", "tuner", "evaluator", "bulk_inferrer", "predict")


def _untagged_schema_problems(entries: list[ComponentEntry], labels: list[str], config: PipelineConfig) -> list[str]:
    """A schema_gen without the ingest's schema infers one from statistics alone: no label role, no column types, no
    image shape. Where the ingest writes the schema from the data (csv, parquet, tfrecord, images), a task built on
    it fails after the ingest; said here, as `kflow validate` finds every other problem of the DAG."""
    if not config.data or config.data.dataset not in DATASETS or get_dataset(config.data.dataset).schema is not None:
        return []
    by_id = {entry.id: (entry, label) for entry, label in zip(entries, labels, strict=True)}
    ingest = next((entry.id for entry in entries if entry.type == "ingest" or entry.type.endswith("_ingest")), None)
    untagged = {}
    for entry in entries:
        producer = entry.inputs.get("schema", "").partition(".")[0]
        if entry.type in _TASK_READERS and producer in by_id:
            source, label = by_id[producer]
            # A frozen schema (schema_file: a copy of the ingest's schema.pbtxt) keeps the label's tags itself.
            if (
                source.type == "schema_gen"
                and "ingest_schema" not in source.inputs
                and "schema_file" not in (source.parameters or {})
            ):
                untagged.setdefault(label, []).append(entry.id)
    return [
        f"{label}.inputs.ingest_schema: is required where {', '.join(readers)} read(s) its schema: the "
        f"{config.data.dataset} ingest's schema gives the label and the columns' types, which statistics alone do not "
        f"(ingest_schema: {ingest or 'ingest'}.schema)"
        for label, readers in untagged.items()
    ]


def _references(entry: ComponentEntry) -> list[tuple[str, str]]:
    """(field path under the entry, "node.output") of every reference the entry makes."""
    found = [(f"inputs.{name}", ref) for name, ref in entry.inputs.items()]
    return found + ([("run_if", entry.run_if)] if given(entry.run_if) else [])


def _reference_problems(entries: list[ComponentEntry], labels: list[str]) -> list[str]:
    ids = [entry.id for entry in entries]
    problems = []
    for entry, label in zip(entries, labels, strict=True):
        for where, ref in _references(entry):
            producer = ref.partition(".")[0]
            if producer == entry.id:
                problems.append(f"{label}.{where}: {ref!r} is the node's own output")
            elif producer not in ids:
                problems.append(
                    f"{label}.{where}: no component {producer!r}{did_you_mean(producer, ids)} (ids: {', '.join(ids)})"
                )
    if not problems and (cycle := _cycle(entries)):
        problems.append(f"components.{cycle[0]}: its inputs form a cycle: {' → '.join(cycle)}")
    return problems


def _upstream(entry: ComponentEntry) -> set[str]:
    return {ref.partition(".")[0] for _, ref in _references(entry)}


def _cycle(entries: list[ComponentEntry]) -> list[str] | None:
    """A cycle of node ids (its first id repeated at the end), or None."""
    upstream = {entry.id: sorted(_upstream(entry)) for entry in entries}
    state: dict[str, str] = {}
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node], _ = "open", path.append(node)
        for up in upstream[node]:
            if state.get(up) == "open":
                return [*path[path.index(up) :], up]
            if up not in state and (found := visit(up)):
                return found
        state[node], _ = "done", path.pop()
        return None

    for node in upstream:
        if node not in state and (found := visit(node)):
            return found
    return None


def _dependency_order(entries: list[ComponentEntry]) -> list[str]:
    done: list[str] = []
    remaining = list(entries)
    while remaining:
        ready = [entry for entry in remaining if _upstream(entry) <= set(done)]
        done += [entry.id for entry in ready]
        remaining = [entry for entry in remaining if entry not in ready]
    return done


def _build_node(
    entry: ComponentEntry,
    label: str,
    cls: type[Component],
    built: dict[str, Component],
    config: PipelineConfig,
    pipeline_dir: Path | None = None,
    local_data: bool = True,
) -> tuple[Component | None, list[str]]:
    """The node of one entry, or None and the problems that keep it from being built."""
    spec, problems = cls.spec, []
    channels: dict[str, Channel] = {}
    for name, ref in entry.inputs.items():
        if name not in spec.inputs:
            known = ", ".join(spec.inputs) or "none"
            problems.append(f"{label}.inputs.{name}: {cls.__name__} has no input {name!r} (inputs: {known})")
        elif (channel := _channel(ref, built, f"{label}.inputs.{name}", problems)) is not None:
            if not issubclass(channel.type, spec.inputs[name]):
                problems.append(
                    f"{label}.inputs.{name}: {cls.__name__}'s {name} is {spec.inputs[name].type_name}, "
                    f"but {ref} is {channel.type.type_name}"
                )
            channels[name] = channel
    problems += [
        f"{label}.inputs.{name}: is required ({kind.type_name}, e.g. {_example_reference(kind, built)})"
        for name, kind in spec.inputs.items()
        if name not in entry.inputs and name not in spec.optional_inputs
    ]
    run_if = _channel(entry.run_if, built, f"{label}.run_if", problems) if given(entry.run_if) else None
    if run_if is not None and run_if.type.type_name != "ModelBlessing":
        problems.append(f"{label}.run_if: wants a ModelBlessing output, but {entry.run_if} is {run_if.type.type_name}")
    parameters = {**_defaults(entry.type, config, spec), **entry.parameters}
    resolver = None
    if entry.type == "evaluator" and "baseline_model" not in entry.inputs:  # evaluator.baseline, as the standard's
        try:
            parameters = {**baseline_parameters(config), **parameters}
        except ConfigError as error:
            problems += error.problems
        if pipeline_dir is not None and config.evaluator.baseline == "latest_blessed":
            resolver = latest_blessed(pipeline_dir, config.to_dict(), "model")
    for name, value in list(parameters.items()):
        if name not in spec.parameters:
            problems.append(
                f"{label}.parameters.{name}: {cls.__name__} has no such parameter"
                f"{did_you_mean(name, spec.parameters)} (parameters: {', '.join(spec.parameters)})"
            )
            continue
        try:
            spec.parameters[name].check(name, value)
        except TypeError:
            kind = spec.parameters[name].type.__name__
            problems.append(f"{label}.parameters.{name}: must be {kind}, got {type(value).__name__} ({value!r})")
        if spec.parameters[name].is_path and isinstance(value, str):
            parameters[name] = absolute(value)
    problems += [
        f"{label}.parameters.{name}: is required ({parameter.type.__name__}: {parameter.description or name})"
        for name, parameter in spec.parameters.items()
        if parameter.required and name not in parameters
    ]
    if problems:
        return None, problems
    if any(ref.partition(".")[0] not in built for ref in entry.inputs.values()):
        return None, []  # an input's node was not built: its own problems are said, not this one's knock-on
    try:
        node = cls(entry.id, parameters=parameters, run_if=run_if, run_time_parameters=resolver, **channels)
    except (ValueError, TypeError) as error:
        return None, [f"{label}: {error}"]
    if not local_data and not _reads_here(node):  # compiling: the pods read its source, which is not of this machine
        return node, []
    return node, [f"{label}.parameters: {problem}" for problem in node.check_parameters()]


def _reads_here(node: Component) -> bool:
    """Whether a node reads no source, or one this machine has (a path, a pattern matching files here)."""
    import glob

    paths = [
        value
        for name, value in node.parameters.items()
        if name in node.spec.parameters and node.spec.parameters[name].is_path and isinstance(value, str) and value
    ]
    return not paths or all("://" not in path and glob.glob(str(Path(path).expanduser())) for path in paths)


def _defaults(type_name: str, config: PipelineConfig, spec: Any) -> dict[str, Any]:
    """The config section's values for a node of `type_name`: only for the kflow types that have one."""
    section = SECTION_DEFAULTS.get(type_name)
    if section is None or (type_name == "ingest" and not config.data):
        return {}
    return {name: value for name, value in section(config).items() if name in spec.parameters}


def _channel(ref: str, built: dict[str, Component], where: str, problems: list[str]) -> Channel | None:
    producer, _, output = ref.partition(".")
    node = built.get(producer)
    if node is None:  # Its own entry had problems, already reported.
        return None
    if output not in node.outputs:
        problems.append(
            f"{where}: {producer} ({type(node).__name__}) has no output {output!r}"
            f"{did_you_mean(output, node.outputs)} (outputs: {', '.join(node.outputs)})"
        )
        return None
    return node.outputs[output]


def _example_reference(kind: type, built: dict[str, Component]) -> str:
    for node in built.values():
        for name, channel in node.outputs.items():
            if issubclass(channel.type, kind):
                return f"{node.id}.{name}"
    return "node.output"
