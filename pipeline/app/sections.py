"""The config's `data`, `trainer` and `evaluator` sections as component parameters.

The standard pipeline's nodes take exactly these; in a declared DAG they are the defaults of
every node of the matching type, which its own `parameters` override.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kflow.components.datasets import get_dataset
from kflow.pipeline.app.dataset_settings import dataset_settings
from kflow.pipeline.dsl.config import PipelineConfig

EVALUATOR_FIELDS = ("split", "batch_size", "thresholds", "slices", "seed", "require_baseline")


def ingest_parameters(config: PipelineConfig) -> dict[str, Any]:
    """The `data` section as the parameters of its dataset's ingest component."""
    data = config.data
    dataset, filters = get_dataset(data["dataset"]), data["filters"]
    parameters = {
        "source_path": absolute(data["source"]["path"]),
        "source_format": data["source"]["format"],
        "max_records": data["source"]["max_records"],
        "split": data.get("split") or dataset.default_split,
        "shards_per_split": 0 if data["shards_per_split"] == "auto" else data["shards_per_split"],
        "max_invalid_fraction": float(data["filters"]["max_invalid_fraction"]),
        "beam_args": config.beam_args,
    }
    # Dataset-specific filters; a null keeps the component's default (wikitext2 min_chars 101, quora max_chars 1000).
    parameters.update({name: filters[name] for name in dataset.filters if filters.get(name) is not None})
    parameters.update({name: data[field] for field, name in dataset.data_fields.items() if data.get(field) is not None})
    if dataset.settings is not None:
        parameters["settings"] = dataset_settings(config)
    return parameters


def trainer_parameters(config: PipelineConfig) -> dict[str, Any]:
    """The `trainer` section as the Trainer's parameters: the same names, the `optimizer` group
    flattened (`optimizer.name` → `optimizer`, `optimizer.learning_rate` → `learning_rate`), `model` →
    `model_name` (the Trainer's `model` is its output artifact); the `dataset` is `data.dataset` (when the config
    has a `data` section)."""
    trainer = dict(config.trainer)
    optimizer, model_name = trainer.pop("optimizer"), trainer.pop("model")
    trainer.pop("hyperparameters", None)  # the pipeline's wiring (tuning.py), not a setting of the training
    parameters = {
        **trainer,
        **{name: value for name, value in optimizer.items() if name != "name"},
        "optimizer": optimizer["name"],
        "model_name": model_name,
    }
    if config.data:
        parameters["dataset"] = config.data["dataset"]
    if parameters.get("module") is not None and Path(parameters["module"]).suffix == ".py":
        parameters["module"] = absolute(parameters["module"])
    return parameters


def evaluator_parameters(config: PipelineConfig) -> dict[str, Any]:
    """The `evaluator` section's fields the Evaluator takes as they are (the baseline is resolved apart)."""
    return {**{key: config.evaluator[key] for key in EVALUATOR_FIELDS}, "report_title": config.name}


def absolute(path: str | None) -> str | None:
    """Local paths are relative to the working directory; the cache key needs them absolute. A URI (gs://, s3://)
    stays as it is."""
    if path is None or "://" in path:
        return path
    return str(Path(path).expanduser().resolve())
