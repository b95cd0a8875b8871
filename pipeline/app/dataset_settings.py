"""`data.settings`: a dataset's own settings, checked against the model its bundle declares (Dataset.settings).

A dataset of another package brings its settings with it: its bundle names a pydantic model, `kflow validate` checks
`data.settings` against it (one line a problem, naming the field, with the nearest name for a misspelt one), the
config reference documents it (pipeline/app/schema.py), and its ingest receives the filled-in settings as its
`settings` parameter, which its executor reads back with `Dataset.read_settings` into the same typed object.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from kflow.components.datasets import get_dataset
from kflow.pipeline.dsl.config import PipelineConfig, did_you_mean


def settings_problems(config: PipelineConfig) -> list[str]:
    dataset, value = get_dataset(config.data.dataset), config.data.settings
    model = dataset.settings_model()
    if model is None:
        if value is None:
            return []
        return [f"data.settings: {dataset.name} takes no settings of its own (only datasets that declare a model do)"]
    try:
        dataset.read_settings(value)
    except ValidationError as error:
        return [_one_line(problem, model) for problem in error.errors()]
    return []


def dataset_settings(config: PipelineConfig) -> dict[str, Any] | None:
    """The dataset's settings with their defaults filled in, as JSON (its ingest's `settings` parameter); None for
    a dataset without a settings model."""
    dataset = get_dataset(config.data.dataset)
    if dataset.settings_model() is None:
        return None
    try:
        return dataset.read_settings(config.data.settings).model_dump(mode="json")
    except ValidationError:
        return config.data.settings  # As written: settings_problems names what is wrong, and run stops there.


def _one_line(problem: dict[str, Any], model: Any) -> str:
    where = ".".join(str(part) for part in ("data", "settings", *problem["loc"]))
    if problem["type"] == "extra_forbidden":
        name = str(problem["loc"][-1])
        fields = ", ".join(model.model_fields)
        return f"{where}: unknown field{did_you_mean(name, model.model_fields)} (fields: {fields})"
    return f"{where}: {problem['msg']} (got {problem.get('input')!r})"
