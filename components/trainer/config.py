"""The Trainer's settings, declared once: three typed groups that are its component parameters too.

`ModelChoice` says what is trained, `TrainConfig` how the loop trains (JSON-serializable, handed
to worker processes), `ClusterConfig` how the local cluster runs. The Trainer's spec is built
from these fields (`component_parameters`) and its executor turns its keyword parameters back
into them (`TrainerSettings.from_parameters`), so a new setting is one field here, plus its
entry in the config schema (schemas/config.schema.json), which is what users write.
"""

from __future__ import annotations

import types
import typing
from dataclasses import MISSING, asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from kflow.components.trainer.strategies import get_strategy
from kflow.pipeline.dsl.component import Parameter

OPTIMIZERS = ("adam", "adamw", "sgd")
SCHEDULES = ("constant", "cosine", "polynomial")


def setting(default: Any, description: str = "", *, affects_output: bool = True, is_path: bool = False) -> Any:
    """A dataclass field carrying the description, cache flag and path flag of its component parameter."""
    metadata = {"description": description, "affects_output": affects_output, "is_path": is_path}
    if isinstance(default, dict):
        return field(default_factory=lambda: dict(default), metadata=metadata)
    return field(default=default, metadata=metadata)


@dataclass(frozen=True)
class ModelChoice:
    """What is trained: a registered dataset's task and a model from its registry."""

    task: str = setting("mnist", "a registered dataset (kflow.components.datasets)")
    model_name: str | None = setting(None, "a name in the model registry; None: the task's default model")
    model_options: dict = setting({}, "keyword arguments for the task and its model factory")
    module: str | None = setting(
        None,
        "a Python file defining build_model(schema, options) (see README, 'Your own model'); replaces model_name",
        affects_output=False,
        is_path=True,
    )
    module_source: str | None = setting(
        None, "the module's source, read when the pipeline is built: the cache key sees edits, pipeline.yaml carries it"
    )

    @property
    def chosen_model(self) -> str | None:
        """The model's name in logs, history.json and the report: the user module's (`my_model` for my_model.py);
        else the config's (None: the task's default)."""
        if self.module:
            return Path(self.module).stem if self.module.endswith(".py") else self.module.rsplit(".", 1)[-1]
        return self.model_name


@dataclass
class TrainConfig:
    """How the loop trains (JSON-serializable, for worker processes)."""

    strategy: str = setting("default", "a registered strategy (kflow.components.trainer.strategies)")
    epochs: int = setting(3)
    batch_size: int = setting(128, "the global batch size")
    steps_per_epoch: int | None = setting(None, "unset: one pass over the train split")
    optimizer: str = setting("adam", " | ".join(OPTIMIZERS))
    learning_rate: float = setting(0.001)
    weight_decay: float = setting(0.0, "adamw; 0 means Keras' default 0.004")
    schedule: str = setting("constant", " | ".join(SCHEDULES))
    warmup_steps: int = setting(0)
    mixed_precision: bool = setting(False)
    early_stopping_patience: int | None = setting(None, "unset: off; else epochs without val_loss improvement")
    shuffle_buffer: int = setting(10000, "in examples; 0 turns shuffling off")
    seed: int = setting(42)
    checkpoint_every_steps: int | None = setting(None, "unset: at every epoch end")
    log_every_steps: int = setting(100, affects_output=False)
    # The longest wait between steps measured on the shipped configs (2 cores, the first step with its compiling
    # included) is 8.9 s (WikiText-2's BERT under MWMS; MNIST 2.2 s, Quora PS 1.3 s, JAX loop 2x2 3.8 s): 300 s
    # leaves 30 times that for bigger models, slower machines and checkpoint writes, and sees a hang in 5 minutes.
    stall_timeout: float = setting(
        300.0,
        "seconds without a finished step (or evaluation batch) after which a training cluster counts as stalled",
        affects_output=False,
    )
    mesh: dict | None = setting(
        None, "keras_model_parallel: {shape: [batch, model], axes: [names]}; unset: processes × local devices"
    )
    layout_map: dict | None = setting(
        None, "keras_model_parallel: {weight path regex: [mesh axis or null per dimension]}; unset: the model's own"
    )

    def validate(self) -> None:
        get_strategy(self.strategy)  # A ValueError naming the strategies otherwise.
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"unknown optimizer {self.optimizer!r}; choose one of {', '.join(OPTIMIZERS)}")
        if self.schedule not in SCHEDULES:
            raise ValueError(f"unknown learning-rate schedule {self.schedule!r}; choose one of {', '.join(SCHEDULES)}")
        for name in ("epochs", "batch_size", "steps_per_epoch", "checkpoint_every_steps", "log_every_steps"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name} must be at least 1, got {value}")
        if self.stall_timeout <= 0:
            raise ValueError(f"stall_timeout must be positive, got {self.stall_timeout}")
        if self.learning_rate <= 0:
            raise ValueError(f"learning_rate must be positive, got {self.learning_rate}")
        if self.weight_decay < 0 or self.warmup_steps < 0:
            raise ValueError("weight_decay and warmup_steps must not be negative")
        if self.mesh is not None:
            shape, axes = self.mesh.get("shape"), self.mesh.get("axes")
            if not shape or not axes or len(shape) != len(axes) or any(int(size) < 1 for size in shape):
                raise ValueError(f"mesh needs as many axes as sizes (each at least 1), got {self.mesh}")
        if self.layout_map is not None:
            axes = set(self.mesh["axes"]) if self.mesh else {"batch", "model"}
            for pattern, layout in self.layout_map.items():
                unknown = {axis for axis in layout if axis is not None} - axes
                if unknown:
                    raise ValueError(
                        f"layout_map[{pattern!r}] names axes {sorted(unknown)} not in the mesh {sorted(axes)}"
                    )

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ClusterConfig:
    """The local cluster of the multi-process strategies (ignored inside a cluster that has TF_CONFIG)."""

    workers: int = setting(2, "worker processes of the multi-process strategies")
    parameter_servers: int = setting(1, "ps processes under parameter_server")
    devices: int | None = setting(
        None, "mirrored: split the first device into N logical devices; JAX strategies: N host devices on CPU"
    )
    # Two restarts ride out a lost process or two (a preempted pod, an OOM kill) without hiding a
    # deterministic failure for long: a crash that repeats fails the run after three attempts.
    max_restarts: int = setting(2, "cluster restarts from the last checkpoint after a process dies")
    sidecar_evaluator: bool = setting(False, "an evaluator task evaluates each checkpoint while training runs")

    def validate(self) -> None:
        if self.max_restarts < 0:
            raise ValueError(f"max_restarts must not be negative, got {self.max_restarts}")


GROUPS = (ModelChoice, TrainConfig, ClusterConfig)


@dataclass(frozen=True)
class TrainerSettings:
    """The Trainer's parameters, grouped and typed."""

    model: ModelChoice
    training: TrainConfig
    cluster: ClusterConfig

    @classmethod
    def from_parameters(cls, parameters: dict[str, Any]) -> TrainerSettings:
        """From the Trainer's flat keyword parameters; unknown names are a TypeError naming them."""
        known = {item.name for group in GROUPS for item in fields(group)}
        unknown = sorted(set(parameters) - known)
        if unknown:
            raise TypeError(f"unknown Trainer parameter(s): {', '.join(unknown)} (known: {', '.join(sorted(known))})")
        model, training, cluster = (
            group(**{item.name: parameters[item.name] for item in fields(group) if item.name in parameters})
            for group in GROUPS
        )
        training.validate()
        cluster.validate()
        get_strategy(training.strategy).replicas(  # refuses bad counts and a sidecar a strategy cannot have
            cluster.workers, cluster.parameter_servers, cluster.sidecar_evaluator
        )
        return cls(model, training, cluster)


def component_parameters() -> dict[str, Parameter]:
    """The Trainer's component parameters, one per field of the groups."""
    parameters = {}
    for group in GROUPS:
        hints = typing.get_type_hints(group)
        for item in fields(group):
            kind, optional = _unwrap_optional(hints[item.name])
            default = item.default if item.default_factory is MISSING else item.default_factory()
            parameters[item.name] = Parameter(
                kind,
                default=default,
                optional=optional,
                affects_output=item.metadata.get("affects_output", True),
                description=item.metadata.get("description", ""),
                is_path=item.metadata.get("is_path", False),
            )
    return parameters


def _unwrap_optional(hint: Any) -> tuple[type, bool]:
    """`int | None` → (int, True); `int` → (int, False)."""
    if isinstance(hint, types.UnionType):
        (kind,) = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        return kind, True
    return hint, False
