"""Trainer settings by their config names (`trainer.optimizer.learning_rate`) applied to the Trainer's parameters.

The config's `trainer` section reaches the Trainer flattened (pipeline/app/sections.py: `optimizer.name` →
`optimizer`, `optimizer.learning_rate` → `learning_rate`, `model` → `model_name`); a tuner's settings use the
config's names, which a user reads and writes. The tuner applies a trial's settings to its Trainer parameters
with `apply_settings`, and the Trainer applies the best ones the same way. `shown_value` is a setting's value as
the tuner's log, `kflow show` and `kflow runs` print it.
"""

from __future__ import annotations

from typing import Any

MODEL_OPTIONS = "trainer.model_options."


def parameter_name(key: str) -> str:
    """The Trainer parameter a setting sets: `trainer.optimizer.name` → `optimizer`, `trainer.model` →
    `model_name`, `trainer.optimizer.<field>` → `<field>`, `trainer.<field>` → `<field>`."""
    if key == "trainer.optimizer.name":
        return "optimizer"
    if key == "trainer.model":
        return "model_name"
    if key.startswith(MODEL_OPTIONS):
        return "model_options"
    return key.removeprefix("trainer.").removeprefix("optimizer.")


def apply_settings(parameters: dict[str, Any], settings: dict[str, Any]) -> dict[str, Any]:
    """`parameters` with each setting in place; a model option is merged into the other options."""
    applied = dict(parameters)
    for key, value in settings.items():
        if key.startswith(MODEL_OPTIONS):
            applied["model_options"] = {**(applied.get("model_options") or {}), key.removeprefix(MODEL_OPTIONS): value}
        else:
            applied[parameter_name(key)] = value
    return applied


def shown_value(value: Any) -> Any:
    """A setting's value as a user reads it: a float to 4 significant digits (a log-uniform draw's 0.0012345678901
    is 0.001235), any other value (an int, a string, a bool, a choice's list) as it is. For printing only: the
    tuner's artifacts (trials.json, best.json) and the Model's metadata keep each value whole."""
    return f"{value:.4g}" if isinstance(value, float) else value
