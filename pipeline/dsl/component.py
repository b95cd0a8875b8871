"""Components: a typed spec (inputs, outputs, parameters) plus the path of the executor.

A component class declares its `spec`; an instance is a node of a pipeline, wired
to upstream outputs through channels. The executor is named by import path and
is a plain function taking artifacts and parameters as keyword arguments, so it
can be called without any runner:

    run(examples=Examples(...), model=Model(...), epochs=3)
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from kflow.pipeline.dsl.artifacts import Artifact
from kflow.pipeline.dsl.code_version import code_version
from kflow.pipeline.dsl.fingerprint import fingerprint_files

# A node's id, as a config's `components` take it (config_model.base.Identifier).
NODE_ID = re.compile(r"[a-z][a-z0-9_]*")

log = logging.getLogger(__name__)

_REQUIRED = object()

_JSON_TYPES: dict[type, tuple[type, ...]] = {
    int: (int,),
    float: (int, float),
    str: (str,),
    bool: (bool,),
    dict: (dict,),
    list: (list,),
}


class InputsRefused(ValueError):
    """A component declines its inputs for a reason its message says whole, with the way out (the Trainer on the
    blocking anomalies of its data): said as it is, not as an exception of some type (`ValueError: ...`)."""


class MissingParameter(ValueError):
    """A required parameter without a value (absent, or None). `component` and `parameter` let a pipeline builder
    name the config field that should have set it (config_checks does, so `kflow validate` gives one line)."""

    def __init__(self, component: str, parameter: str, description: str = ""):
        self.component, self.parameter = component, parameter
        about = f" ({description})" if description else ""
        super().__init__(f"{component}: parameter {parameter!r} is required{about}")


@dataclass(frozen=True)
class Parameter:
    """A JSON-typed execution parameter.

    `affects_output=False` marks parameters such as runner options that change how
    a component runs but not what it produces; they are left out of the cache key.
    """

    type: type
    default: Any = _REQUIRED
    optional: bool = False
    affects_output: bool = True
    description: str = ""
    # A local file or folder: pipeline builders make a relative value absolute (it is in the cache key).
    is_path: bool = False

    @property
    def required(self) -> bool:
        return self.default is _REQUIRED and not self.optional

    def check(self, name: str, value: Any) -> None:
        if value is None and (self.optional or self.default is None):
            return
        allowed = _JSON_TYPES[self.type]
        if isinstance(value, bool) and self.type is not bool:
            allowed = ()
        if not isinstance(value, allowed):
            raise TypeError(f"parameter {name!r} must be {self.type.__name__}, got {type(value).__name__}: {value!r}")


@dataclass(frozen=True)
class ComponentSpec:
    inputs: Mapping[str, type[Artifact]] = field(default_factory=dict)
    outputs: Mapping[str, type[Artifact]] = field(default_factory=dict)
    parameters: Mapping[str, Parameter] = field(default_factory=dict)
    executor: str = ""  # "package.module:function" (or "package.module:Class.function")
    # Inputs a node may leave unwired (an Evaluator without a baseline model); the executor then gets none.
    optional_inputs: frozenset[str] = frozenset()
    # "package.module:function" naming, from the node's parameters, the files the executor will read from
    # outside the pipeline (an ingest's source); their fingerprint is part of the cache key.
    source_files: str = ""
    # {former name: name} of parameters that were renamed: a node that still uses the former name gets a warning.
    renamed_parameters: Mapping[str, str] = field(default_factory=dict)
    # "package.module:function" taking the node's parameters and returning a context manager: what a local run
    # enters while the components before the node run, when it knows the node will run after them (the
    # Trainer starts its cluster's processes, which load their libraries meanwhile), and leaves when it ends.
    warm_up: str = ""


@dataclass(frozen=True)
class Channel:
    """An output of one node, as seen by the nodes that consume it."""

    producer: str
    output: str
    type: type[Artifact]


class Component:
    """A node of a pipeline: a component spec bound to inputs and parameter values.

    `run_if` names a ModelBlessing output upstream: the node runs only when that model was
    blessed (TFX's Pusher pattern); otherwise it is skipped, and so are the nodes that consume its outputs.

    `run_time_parameters` computes parameters that depend on what earlier runs made (TFX's resolver
    nodes: the latest blessed model) from the fingerprints of the node's inputs; the runner calls it
    (`resolve_run_time_parameters`) before it computes the node's fingerprint, so they are in its cache key.
    """

    spec: ClassVar[ComponentSpec]

    def __init__(
        self,
        id: str,
        *,
        parameters: Mapping[str, Any] | None = None,
        run_if: Channel | None = None,
        run_time_parameters: Callable[[dict[str, str]], dict[str, Any]] | None = None,
        **inputs: Channel | None,
    ):
        if not isinstance(id, str) or not NODE_ID.fullmatch(id):  # a folder of the run, a KFP task's name
            raise ValueError(f"component id {id!r}: lowercase letters, digits and _, starting with a letter (a folder "
                             "of the run: '../x' wrote outside it)")  # fmt: skip
        self.id = id
        self.inputs = self._bind_inputs({name: channel for name, channel in inputs.items() if channel is not None})
        self.parameters = self._bind_parameters(dict(parameters or {}))
        self.outputs = {name: Channel(id, name, kind) for name, kind in self.spec.outputs.items()}
        if run_if is not None and run_if.type.type_name != "ModelBlessing":
            raise TypeError(
                f"{self.id}: run_if wants a ModelBlessing output, got {run_if.type.type_name} "
                f"from {run_if.producer}.{run_if.output}"
            )
        self.run_if = run_if
        self.run_time_parameters = run_time_parameters

    def __repr__(self) -> str:
        return f"{type(self).__name__}(id={self.id!r})"

    @property
    def upstream(self) -> set[str]:
        producers = {channel.producer for channel in self.inputs.values()}
        return producers | ({self.run_if.producer} if self.run_if else set())

    def _bind_inputs(self, inputs: Mapping[str, Channel]) -> dict[str, Channel]:
        unknown = set(inputs) - set(self.spec.inputs)
        if unknown:
            raise ValueError(f"{self.id}: unknown inputs {sorted(unknown)}; expected {sorted(self.spec.inputs)}")
        for name, kind in self.spec.inputs.items():
            if name not in inputs:
                if name in self.spec.optional_inputs:
                    continue
                raise ValueError(f"{self.id}: input {name!r} ({kind.type_name}) is not wired")
            if not issubclass(inputs[name].type, kind):
                raise TypeError(
                    f"{self.id}: input {name!r} wants {kind.type_name}, "
                    f"got {inputs[name].type.type_name} from {inputs[name].producer}.{inputs[name].output}"
                )
        return dict(inputs)

    def _bind_parameters(self, values: dict[str, Any]) -> dict[str, Any]:
        for former, name in self.spec.renamed_parameters.items():
            if former not in values:
                continue
            if name in values:
                raise ValueError(f"{self.id}: parameters {former!r} and {name!r} are one parameter; keep {name!r}")
            log.warning("%s: parameter %r is now called %r; the former name will go in a later release", self.id,
                        former, name)  # fmt: skip
            values[name] = values.pop(former)
        unknown = set(values) - set(self.spec.parameters)
        if unknown:  # one line a user of the Python API can act on: the nearest parameter (epoch: epochs)
            from kflow.pipeline.dsl.config_validation import did_you_mean

            hints = "".join(did_you_mean(name, self.spec.parameters) for name in sorted(unknown))
            raise ValueError(f"{self.id}: unknown parameters {sorted(unknown)}{hints}")
        bound = {}
        for name, parameter in self.spec.parameters.items():
            if parameter.required and values.get(name) is None:
                # None is how a config says "unset" (a null or absent field): required, not a wrong type.
                raise MissingParameter(self.id, name, parameter.description)
            if name in values:
                value = values[name]
            else:
                value = None if parameter.default is _REQUIRED else parameter.default
            parameter.check(name, value)
            bound[name] = value
        return bound

    def resolve_run_time_parameters(self, input_fingerprints: dict[str, str]) -> None:
        if self.run_time_parameters is not None:
            resolved = self.run_time_parameters(input_fingerprints)
            self.parameters = self._bind_parameters({**self.parameters, **resolved})

    @property
    def cache_parameters(self) -> dict[str, Any]:
        """The parameters that determine the outputs, i.e. the ones in the cache key."""
        return {k: v for k, v in self.parameters.items() if self.spec.parameters[k].affects_output}

    def data_fingerprint(self) -> dict[str, Any] | None:
        """The fingerprint of the outside data this node reads (`spec.source_files`), or None if it reads none."""
        if not self.spec.source_files:
            return None
        return fingerprint_files(load_executor(self.spec.source_files)(**self.parameters))

    def warm_up(self) -> contextlib.AbstractContextManager:
        """What `spec.warm_up` starts for this node (nothing without one)."""
        if not self.spec.warm_up:
            return contextlib.nullcontext()
        return load_executor(self.spec.warm_up)(dict(self.parameters))

    def plan_notes(self) -> list[str]:
        """What `kflow plan` adds to the reasons a node would run, once its run-time parameters are resolved (the
        Trainer: which model it warm-starts from)."""
        return []

    def check_parameters(self) -> list[str]:
        """Problems with the bound parameters beyond their JSON types (a component's own rules), one line each;
        `kflow validate` reports them before anything runs."""
        return []

    def cluster_replicas(self) -> dict[str, int]:
        """The processes this node runs as on a cluster, {role: count} (e.g. {"chief": 1, "worker": 2, "ps": 1});
        empty when it runs in one container. Roles are TF_CONFIG task types; a compiler maps them to replicas."""
        return {}

    def cluster_restarts(self) -> int:
        """How many times a failed cluster restarts as a whole (from its last checkpoint) before the node fails."""
        return 0

    def cluster_framework(self) -> str:
        """What the cluster's processes run on: `tensorflow` (TF_CONFIG roles) or `jax` (JAX's coordinator)."""
        return "tensorflow"

    @classmethod
    def code_version(cls) -> str:
        """A hash of every first-party file the component and its executor can run or read (see code_version)."""
        modules = [cls.__module__, cls.spec.executor.partition(":")[0], cls.spec.source_files.partition(":")[0]]
        return code_version(filter(None, modules))


def import_path(path: str, example: str = "package.module:name") -> Any:
    """The object named `package.module:name` (or `package.module:Class.attribute`)."""
    module_name, _, attributes = path.partition(":")
    if not module_name or not attributes:
        raise ValueError(f"path {path!r} must look like {example!r}")
    found: Any = importlib.import_module(module_name)
    for attribute in attributes.split("."):
        found = getattr(found, attribute)
    return found


def load_executor(path: str) -> Callable[..., Any]:
    """Imports an executor function named `package.module:function` or `package.module:Class.function`."""
    return import_path(path, "package.module:function")


def load_component(path: str) -> type[Component]:
    """Imports a component class named `package.module:Class`; ValueError when it names something else."""
    try:
        found = import_path(path, "package.module:Class")
    except AttributeError as error:
        raise ValueError(f"cannot import {path!r}: {error}") from None
    if not (isinstance(found, type) and issubclass(found, Component)):
        raise ValueError(f"{path!r} is not a kflow Component class")
    return found
