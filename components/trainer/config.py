"""The Trainer's settings: three typed groups that are its component parameters too.

`ModelChoice` says what is trained, `TrainConfig` how the loop trains (JSON-serializable, handed
to worker processes), `ClusterConfig` how the local cluster runs. The Trainer's spec is built
from these fields (`component_parameters`) and its executor turns its keyword parameters back
into them (`TrainerSettings.from_parameters`). A field's default and description are the config
model's (`pipeline/dsl/config_model/training.py`, the `trainer` section), where a new setting is declared.
"""

from __future__ import annotations

import types
import typing
from dataclasses import MISSING, asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from annotated_types import Ge, Gt, Le

from kflow.components.trainer.strategies import STRATEGIES, get_strategy
from kflow.pipeline.dsl.artifacts import TransformGraph
from kflow.pipeline.dsl.component import Parameter
from kflow.pipeline.dsl.config_model import Optimizer, OptimizerSection, Schedule, Section, TrainerSection, default_of

OPTIMIZERS = typing.get_args(Optimizer)
SCHEDULES = typing.get_args(Schedule)


def setting(
    default: Any, description: str = "", *, affects_output: bool = True, is_path: bool = False, bounds: tuple = ()
) -> Any:
    """A dataclass field carrying the description, cache flag, path flag and bounds of its component parameter."""
    metadata = {"description": description, "affects_output": affects_output, "is_path": is_path, "bounds": bounds}
    if isinstance(default, dict):
        return field(default_factory=lambda: dict(default), metadata=metadata)
    return field(default=default, metadata=metadata)


def declared(
    name: str, section: type[Section] = TrainerSection, *, affects_output: bool = True, is_path: bool = False
) -> Any:
    """The field `name` of a config section, with the default, description and bounds declared there."""
    declaration = section.model_fields[name]
    bounds = tuple(bound for bound in declaration.metadata if isinstance(bound, (Ge, Gt, Le)))
    description = declaration.description or ""
    return setting(
        default_of(section, name), description, affects_output=affects_output, is_path=is_path, bounds=bounds
    )


class SettingError(ValueError):
    """A Trainer setting refused, its parameter (or a dotted path inside one: `model_options.units`) and the
    problem kept as data, so that `kflow validate` names the config field without reading the message back."""

    def __init__(self, parameter: str, problem: str, message: str | None = None):
        self.parameter, self.problem = parameter, problem
        super().__init__(message or f"{parameter}: {problem}")


def check_bounds(settings: Any) -> None:
    """A ValueError naming the first field of `settings` outside the bounds its config declaration sets."""
    for item in fields(settings):
        value = getattr(settings, item.name)
        for bound in item.metadata.get("bounds", ()) if value is not None else ():
            if isinstance(bound, Ge) and value < bound.ge:
                limit = "must not be negative" if bound.ge == 0 else f"must be at least {bound.ge}"
            elif isinstance(bound, Gt) and value <= bound.gt:
                limit = "must be positive" if bound.gt == 0 else f"must be greater than {bound.gt}"
            elif isinstance(bound, Le) and value > bound.le:
                limit = f"must be at most {bound.le}"
            else:
                continue
            raise SettingError(item.name, f"{limit}, got {value}", f"{item.name} {limit}, got {value}")


@dataclass(frozen=True)
class ModelChoice:
    """What is trained: a registered dataset's task and a model from its registry."""

    dataset: str = field(metadata={"description": "a registered dataset (kflow.components.datasets): data.dataset"})
    # `model_name`, not `model`: the Trainer's `model` is its output artifact (TFX's and KFP's name for it).
    model_name: str | None = declared("model")
    model_options: dict = declared("model_options")
    module: str | None = declared("module", affects_output=False, is_path=True)
    module_source: str | None = setting(
        None, "the module's source, read when the pipeline is built: the cache key sees edits, pipeline.yaml carries it"
    )
    module_imports: dict | None = setting(
        None, "the first-party files the module imports, {path: source}: the cache key sees their edits, pods get them"
    )
    # The Trainer's `transform_graph` input (set by its executor): every training process takes the task's
    # preprocessing from that artifact instead of learning it. Its fingerprint is the input's, not this path's.
    transform_graph_uri: str | None = setting(
        None, "The TransformGraph the task's preprocessing comes from (its input).", affects_output=False
    )

    def __post_init__(self) -> None:
        # A registered model's options are checked when the settings are read (kflow validate, the Trainer's
        # start), not when the model is built after the data is prepared; a user module takes any JSON-like value.
        if not self.module:
            from kflow.components.models import option_problems

            problems = option_problems(self.model_name, self.model_options or {})
            if problems:
                raise SettingError(*problems[0])

    @property
    def chosen_model(self) -> str | None:
        """The model's name in logs, history.json and the report: the user module's (`my_model` for my_model.py);
        else the config's (None: the task's default)."""
        if self.module:
            return Path(self.module).stem if self.module.endswith(".py") else self.module.rsplit(".", 1)[-1]
        return self.model_name

    @property
    def module_origin(self) -> str | None:
        """The file name the user module's errors name."""
        return Path(self.module).name if self.module else None

    def load_task(self, schema_file: str | Path) -> Any:
        """The dataset's `Task` on the schema in `schema_file`, with the user's module or the chosen model."""
        from kflow.components.datasets.task import load_task  # TensorFlow: not before a launcher needs it

        task = load_task(self.dataset, schema_file, self.chosen_model, self.model_options, self.module_source,
                         self.module_origin, self.module_imports)  # fmt: skip
        if self.transform_graph_uri:
            if not hasattr(task, "use_transform_graph"):
                raise ValueError(f"the {self.dataset} dataset's task takes no transform graph (tabular ones do)")
            task.use_transform_graph(TransformGraph(self.transform_graph_uri))
        return task


LOOPS = {"jax_loop": "the explicit JAX loop"}


@dataclass
class TrainConfig:
    """How the loop trains (JSON-serializable, for worker processes)."""

    strategy: str = declared("strategy")
    epochs: int = declared("epochs")
    batch_size: int = declared("batch_size")
    steps_per_epoch: int | None = declared("steps_per_epoch")
    steps_per_execution: int | None = declared("steps_per_execution")
    optimizer: str = declared("name", OptimizerSection)
    learning_rate: float = declared("learning_rate", OptimizerSection)
    weight_decay: float = declared("weight_decay", OptimizerSection)
    schedule: str = declared("schedule", OptimizerSection)
    warmup_steps: int = declared("warmup_steps", OptimizerSection)
    mixed_precision: bool = declared("mixed_precision")
    early_stopping_patience: int | None = declared("early_stopping_patience")
    early_stopping_min_steps: int | None = declared("early_stopping_min_steps")
    early_stopping_monitor: str | None = declared("early_stopping_monitor")
    shuffle_buffer: int = declared("shuffle_buffer")
    seed: int = declared("seed")
    checkpoint_every_steps: int | None = declared("checkpoint_every_steps")
    log_every_steps: int = declared("log_every_steps", affects_output=False)
    stall_timeout: float = declared("stall_timeout", affects_output=False)
    mesh: dict | None = declared("mesh")
    layout_map: dict | None = declared("layout_map")
    warm_start: str | None = declared("warm_start")
    # What warm_start resolved to when the run started (pipeline/app/warm_start.py): a Model folder, or None.
    warm_start_model_uri: str | None = setting(None, "The model folder trainer.warm_start resolved to.")
    warm_start_reason: str | None = setting(None, "Why there is no model to warm-start from.", affects_output=False)

    def patience_epochs(self, steps_per_epoch: int) -> int | None:
        """early_stopping_patience in epochs, at least early_stopping_min_steps' worth of epochs of `steps_per_epoch`
        steps; None when early stopping is off."""
        if self.early_stopping_patience is None or not self.early_stopping_min_steps:
            return self.early_stopping_patience
        return max(self.early_stopping_patience, -(-self.early_stopping_min_steps // steps_per_epoch))

    def validate(self) -> None:
        loop = get_strategy(self.strategy).trainer  # A ValueError naming the strategies otherwise.
        if loop == "jax_loop" and self.mixed_precision:
            raise SettingError("mixed_precision", f"strategy {self.strategy} trains in float32 (the explicit JAX loop)")
        single = LOOPS.get(loop)
        if self.steps_per_call > 1 and single:
            able = ", ".join(n for n, s in STRATEGIES.items() if s.trainer not in LOOPS)
            raise SettingError(
                "steps_per_execution",
                f"strategy {self.strategy} trains one step per call ({single}); only the strategies {able} run several",
            )
        if self.steps_per_epoch is not None and self.steps_per_epoch % self.steps_per_call:
            raise SettingError(
                "steps_per_execution",
                f"{self.steps_per_execution} does not divide steps_per_epoch ({self.steps_per_epoch})",
            )
        if self.optimizer not in OPTIMIZERS:
            problem = f"unknown optimizer {self.optimizer!r}; choose one of {', '.join(OPTIMIZERS)}"
            raise SettingError("optimizer", problem, problem)
        if self.schedule not in SCHEDULES:
            problem = f"unknown learning-rate schedule {self.schedule!r}; choose one of {', '.join(SCHEDULES)}"
            raise SettingError("schedule", problem, problem)
        check_bounds(self)
        if self.mesh is not None:
            shape, axes = self.mesh.get("shape"), self.mesh.get("axes")
            if not shape or not axes or len(shape) != len(axes) or any(int(size) < 1 for size in shape):
                problem = f"needs as many axes as sizes (each at least 1), got {self.mesh}"
                raise SettingError("mesh", problem, f"mesh {problem}")
        if self.layout_map is not None:
            axes = set(self.mesh["axes"]) if self.mesh else {"batch", "model"}
            for pattern, layout in self.layout_map.items():
                unknown = {axis for axis in layout if axis is not None} - axes
                if unknown:
                    problem = f"[{pattern!r}] names axes {sorted(unknown)} not in the mesh {sorted(axes)}"
                    raise SettingError("layout_map", problem, f"layout_map{problem}")

    @property
    def steps_per_call(self) -> int:
        """The train steps per call set by the user (steps_per_execution), else 1: what `model.fit` runs, and what
        epochs are rounded up to; the custom loop chooses its own when none is set (steps_per_call.py)."""
        return self.steps_per_execution or 1

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def batch_for(self, train_examples: int | None, multiple: int) -> int:
        """The global batch to train with: `batch_size`, or, where the train split holds fewer examples than that,
        the whole split rounded down to a multiple of the replicas in sync, since the tasks train on whole batches
        and a 60-row table would otherwise train on none. A split too small even for that keeps `batch_size`, and
        the loop's check says why it cannot train."""
        if train_examples is None or train_examples >= self.batch_size:
            return self.batch_size
        fitted = train_examples - train_examples % max(multiple, 1)
        return fitted if fitted > 0 else self.batch_size


@dataclass(frozen=True)
class ClusterConfig:
    """The local cluster of the multi-process strategies (ignored inside a cluster that has TF_CONFIG)."""

    workers: int = declared("workers")
    parameter_servers: int = declared("parameter_servers")
    devices: int | None = declared("devices")
    max_restarts: int = declared("max_restarts")
    sidecar_evaluator: bool = declared("sidecar_evaluator")

    def validate(self) -> None:
        check_bounds(self)


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
        missing = [
            item.name for group in GROUPS for item in fields(group) if _required(item) and item.name not in parameters
        ]
        if missing:
            raise TypeError(f"missing Trainer parameter(s): {', '.join(missing)}")
        model, training, cluster = (
            group(**{item.name: parameters[item.name] for item in fields(group) if item.name in parameters})
            for group in GROUPS
        )
        training.validate()
        get_strategy(training.strategy).replicas(  # refuses bad counts and a sidecar a strategy cannot have
            cluster.workers, cluster.parameter_servers, cluster.sidecar_evaluator
        )
        cluster.validate()
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
                **({} if default is MISSING else {"default": default}),
                optional=optional,
                affects_output=item.metadata.get("affects_output", True),
                description=item.metadata.get("description", ""),
                is_path=item.metadata.get("is_path", False),
            )
    return parameters


def _required(item: Any) -> bool:
    return item.default is MISSING and item.default_factory is MISSING


def _unwrap_optional(hint: Any) -> tuple[type, bool]:
    """`int | None` → (int, True); `int` → (int, False)."""
    if isinstance(hint, types.UnionType):
        (kind,) = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        return kind, True
    return hint, False
