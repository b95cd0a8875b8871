"""The settings a run's models were trained with when a tuner chose them (the Model's `hyperparameters` metadata),
for `kflow show` and `kflow runs`."""

from __future__ import annotations

import json
from typing import Any

from kflow.components.util.tuned_settings import shown_value
from kflow.pipeline.dsl.artifacts import Model
from kflow.pipeline.runners.run_record import Run


def tuned_settings(run: Run) -> dict[str, dict[str, Any]]:
    """{node: {trainer field: value}} of each finished node whose Model records a tuner's settings."""
    found = {}
    for node_id, execution in run.executions.items():
        if not execution.finished:
            continue
        for model in execution.outputs_of_type(Model):
            try:
                settings = model.metadata.get("hyperparameters")
            except (OSError, ValueError):  # a model folder gone or damaged: nothing to show, as for no tuner
                continue
            if isinstance(settings, dict) and settings:
                found[node_id] = settings
    return found


def format_settings(settings: dict[str, Any]) -> str:
    """`learning_rate=0.001235 hidden_units=[64] batch_size=32`: each field by its last name, a float to 4 significant
    digits (components/util/tuned_settings.py: shown_value), any other value as JSON."""

    def value(item: Any) -> str:
        return shown_value(item) if isinstance(item, float) else json.dumps(item, separators=(",", ":"))

    return " ".join(f"{key.rsplit('.', 1)[-1]}={value(item)}" for key, item in sorted(settings.items()))
