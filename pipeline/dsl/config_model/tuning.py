"""The `tuner` section: a hyperparameter search over trainer fields (components/tuner, docs/tuning.md).

A search-space key is a trainer field's dotted name as the config spells it (`trainer.optimizer.learning_rate`,
`trainer.model_options.hidden_units`, `trainer.batch_size`); `search_space_problems` refuses, when the config is
loaded, a key that names no trainer field, with the nearest one.
"""

from __future__ import annotations

import difflib
from typing import Annotated, Any, Literal

from pydantic import MISSING, ConfigDict, Field

from kflow.pipeline.dsl.config_model.base import Section, section
from kflow.pipeline.dsl.config_model.training import ModelOption, OptimizerSection, TrainerSection

Algorithm = Literal["random", "tpe", "hyperband", "successive_halving"]

# Trainer fields a search cannot take: groups (their own fields are the keys), code, and the cluster's shape.
UNTUNABLE = (
    "optimizer",
    "model_options",
    "module",
    "hyperparameters",
    "warm_start",
    "mesh",
    "layout_map",
    "devices",
    "workers",
    "parameter_servers",
)


class SearchDomain(Section):
    """Exactly one of: uniform [low, high], log_uniform [low, high] (low > 0), int [low, high], log_int [low, high],
    choice [value, ...] (values as the field takes them: [[64], [128, 64]] for hidden_units)."""

    model_config = ConfigDict(json_schema_extra={"minProperties": 1, "maxProperties": 1})

    uniform: list[float] | MISSING = Field(MISSING, min_length=2, max_length=2)
    log_uniform: list[float] | MISSING = Field(MISSING, min_length=2, max_length=2)
    # `int` is the key; the attribute is int_ so that the class's annotations still mean the builtin.
    int_: list[int] | MISSING = Field(MISSING, alias="int", min_length=2, max_length=2)
    log_int: list[int] | MISSING = Field(MISSING, min_length=2, max_length=2)
    choice: list[ModelOption] | MISSING = Field(MISSING, min_length=1)


class ObjectiveSection(Section):
    metric: str = Field("val_loss", pattern=r"^val_[a-z0-9_]+$")
    """A validation metric of the task, as the Trainer's history names it: val_loss, val_accuracy, val_auc, ..."""
    direction: Literal["minimize", "maximize"] | None = None
    """null: minimize a loss or an error (mae, rmse, perplexity, ...), maximize any other metric"""


class TunerSection(Section):
    """A hyperparameter search before the Trainer: trials train on Split-train and are scored on Split-eval (never
    the test split), the Trainer then trains with the best settings (docs/tuning.md)."""

    search_space: dict[str, SearchDomain] = Field(min_length=1)
    """{trainer field: domain}, e.g. {trainer.optimizer.learning_rate: {log_uniform: [1e-4, 1e-2]},
    trainer.model_options.hidden_units: {choice: [[64], [128, 64]]}, trainer.batch_size: {choice: [32, 64]}}"""
    algorithm: Algorithm = "tpe"
    """random: Optuna's random sampler; tpe: its TPE sampler; hyperband, successive_halving: TPE with Optuna's
    Hyperband or successive-halving pruner, which stop trials whose per-epoch objective falls behind"""
    max_trials: int = Field(12, ge=1, le=10000)
    max_time: float | None = Field(None, gt=0)
    """seconds after which no trial starts (those running finish); null: no limit"""
    objective: ObjectiveSection = section(ObjectiveSection)
    trial_epochs: int | None = Field(None, ge=1)
    """each trial's epochs (KerasTuner's search(epochs=...)): short trials, then the Trainer trains the best settings
    for trainer.epochs; null: trainer.epochs (Hyperband's and successive halving's most epochs a trial)"""
    parallel_trials: int = Field(1, ge=1, le=64)
    """trials at a time: processes locally, parallel tasks of the compiled pipeline on Kubeflow"""
    seed: int = 0
    """the sampler's seed"""


def tunable_fields() -> list[str]:
    """The dotted trainer fields a search space may name (`trainer.model_options.<option>` takes any option)."""
    plain = [f"trainer.{name}" for name in TrainerSection.model_fields if name not in UNTUNABLE]
    return [*plain, *(f"trainer.optimizer.{name}" for name in OptimizerSection.model_fields)]


def search_space_problems(raw: dict[str, Any]) -> list[str]:
    """`tuner.search_space.<key>: ...` for each key that names no trainer field, with the nearest one."""
    tuner = raw.get("tuner")
    trainer = raw.get("trainer")
    if isinstance(trainer, dict) and trainer.get("hyperparameters") == "tuner" and not tuner:
        return ["trainer.hyperparameters: tuner takes a search's best settings; the config has no tuner section"]
    space = tuner.get("search_space") if isinstance(tuner, dict) else None
    if not isinstance(space, dict):
        return []
    if tuner.get("trial_epochs") is not None and "trainer.epochs" in space:
        return [
            "tuner.trial_epochs: sets every trial's epochs, which the search space searches too (trainer.epochs): "
            "keep one"
        ]
    known = tunable_fields()
    problems = []
    for key in space:
        if key in known or (key.startswith("trainer.model_options.") and len(key) > len("trainer.model_options.")):
            continue
        close = difflib.get_close_matches(key, [*known, "trainer.model_options.<option>"], n=1)
        hint = f"; did you mean {close[0]}?" if close else ""
        problems.append(f"tuner.search_space.{key}: not a trainer field a search can set{hint}")
    for key, domain in space.items():  # the bounds Optuna's distributions need (the schema checks the shapes)
        for kind, values in domain.items() if isinstance(domain, dict) else ():
            if kind == "choice" or not isinstance(values, list) or len(values) != 2:
                continue
            low, high = values
            if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
                continue
            if low >= high:
                problems.append(f"tuner.search_space.{key}.{kind}: low must be below high (got {values})")
            elif kind.startswith("log_") and low <= 0:
                problems.append(f"tuner.search_space.{key}.{kind}: a log scale needs low > 0 (got {low})")
    return problems + _values_the_fields_refuse(space)


def _values_the_fields_refuse(space: dict[str, Any]) -> list[str]:
    """A choice, low or high that the trainer field itself refuses (trainer.epochs: {choice: [0]}: every trial
    failed on it): checked against the field's own type and bounds."""
    from pydantic import TypeAdapter, ValidationError

    problems = []
    for key, domain in space.items():
        parts = key.split(".")
        model = OptimizerSection if parts[1:2] == ["optimizer"] else TrainerSection
        info = model.model_fields.get(parts[-1]) if len(parts) == (3 if model is OptimizerSection else 2) else None
        if info is None or not isinstance(domain, dict):
            continue
        field_type = TypeAdapter(Annotated[info.annotation, *info.metadata] if info.metadata else info.annotation)
        for kind, values in domain.items():
            for value in values if isinstance(values, list) else ():
                try:
                    field_type.validate_python(value)
                except ValidationError as error:
                    why = error.errors()[0]["msg"].lower()
                    problems.append(f"tuner.search_space.{key}.{kind}: {value!r} is no value of {key} ({why})")
                    break
    return problems
