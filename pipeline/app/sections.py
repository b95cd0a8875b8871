"""The config's `data`, `trainer` and `evaluator` sections as component parameters.

The standard pipeline's nodes take exactly these; in a declared DAG they are the defaults of
every node of the matching type, which its own `parameters` override.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kflow.components.datasets import get_dataset
from kflow.pipeline.app.dataset_settings import dataset_settings
from kflow.pipeline.dsl.config import ConfigError, PipelineConfig, as_data
from kflow.pipeline.dsl.config_model import OptimizerSection, given

EVALUATOR_FIELDS = ("split", "batch_size", "thresholds", "slices", "seed", "require_baseline")

# The one table of config fields whose component parameter has another name: {field: (node, parameter)}. Every
# other field a node takes keeps its last part: trainer.epochs → train's epochs, trainer.optimizer.learning_rate →
# train's learning_rate. Read when the sections become parameters, when a field becomes a run-time pipeline input
# (runtime_parameters.py), and when a parameter the Trainer refuses is named by its field (config_checks.py).
RENAMED_FIELDS = {
    "data.source.path": ("ingest", "source_path"),
    "data.source.format": ("ingest", "source_format"),
    "data.source.max_records": ("ingest", "max_records"),
    "trainer.optimizer.name": ("train", "optimizer"),
    "trainer.model": ("train", "model_name"),  # the Trainer's `model` is its output artifact (TFX's and KFP's name)
}
INGEST_FIELDS = ("split", "shards_per_split")  # the data fields the ingest takes as they are


def node_parameter(field: str) -> tuple[str, str] | None:
    """(node id, parameter) of the standard pipeline that a config field sets, or None when it sets none."""
    parts = field.split(".")
    if field in RENAMED_FIELDS:
        return RENAMED_FIELDS[field]
    if parts[0] == "data" and len(parts) == 2 and parts[1] in INGEST_FIELDS:
        return "ingest", parts[1]
    if parts[0] == "trainer" and len(parts) == 2 and parts[1] != "optimizer":
        return "train", parts[1]
    if parts[:2] == ["trainer", "optimizer"] and len(parts) == 3:
        return "train", parts[2]
    if parts[0] == "evaluator" and len(parts) == 2 and parts[1] in EVALUATOR_FIELDS:
        return "evaluate", parts[1]
    return None


def trainer_field(parameter: str) -> str:
    """The config field that sets a Trainer parameter (`learning_rate` → `trainer.optimizer.learning_rate`;
    `model_options.units` → `trainer.model_options.units`)."""
    name, dot, rest = parameter.partition(".")
    renamed = {renamed_to: field for field, (node, renamed_to) in RENAMED_FIELDS.items() if node == "train"}
    if name in renamed:
        return renamed[name] + dot + rest
    if name in OptimizerSection.model_fields:
        return f"trainer.optimizer.{parameter}"
    return f"trainer.{parameter}"


def ingest_parameters(config: PipelineConfig) -> dict[str, Any]:
    """The `data` section as the parameters of its dataset's ingest component."""
    data = config.data
    dataset, filters = get_dataset(data.dataset), data.filters
    parameters = {
        "source_path": absolute(data.source.path),
        "source_format": data.source.format,
        "max_records": data.source.max_records,
        "split": given(data.split) or dataset.default_split,
        "shards_per_split": 0 if data.shards_per_split == "auto" else data.shards_per_split,
        "max_invalid_fraction": float(filters.max_invalid_fraction),
        "beam_args": config.beam_args,
    }
    # Dataset-specific filters; a null keeps the component's default (wikitext2 min_chars 101, quora max_chars 1000).
    parameters.update({name: getattr(filters, name) for name in dataset.filters if getattr(filters, name) is not None})
    written = as_data(data)  # the sub-sections (image, tfds, csv) as the mappings their parameters take
    parameters.update(
        {name: written[field] for field, name in dataset.data_fields.items() if written.get(field) is not None}
    )
    if dataset.settings is not None:
        parameters["settings"] = dataset_settings(config)
    return parameters


def trainer_parameters(config: PipelineConfig) -> dict[str, Any]:
    """The `trainer` section as the Trainer's parameters: the same names, the `optimizer` group
    flattened (`optimizer.name` → `optimizer`, `optimizer.learning_rate` → `learning_rate`), `model` →
    `model_name` (the Trainer's `model` is its output artifact); the `dataset` is `data.dataset` (when the config
    has a `data` section)."""
    trainer = as_data(config.trainer)
    trainer.pop("hyperparameters", None)  # the pipeline's wiring (tuning.py), not a setting of the training
    optimizer = {f"optimizer.{name}": value for name, value in trainer.pop("optimizer").items()}
    parameters = {node_parameter(f"trainer.{field}")[1]: value for field, value in {**trainer, **optimizer}.items()}
    if config.data:
        parameters["dataset"] = config.data.dataset
    if parameters.get("module") is not None and Path(parameters["module"]).suffix == ".py":
        parameters["module"] = absolute(parameters["module"])
    return parameters


def evaluator_parameters(config: PipelineConfig) -> dict[str, Any]:
    """The `evaluator` section's fields the Evaluator takes as they are (the baseline is resolved apart)."""
    evaluator = as_data(config.evaluator)
    return {**{key: evaluator[key] for key in EVALUATOR_FIELDS}, "report_title": config.name}


def baseline_parameters(config: PipelineConfig) -> dict[str, Any]:
    """The Evaluator's baseline from `evaluator.baseline` when it is `none` or a Model folder."""
    baseline = config.evaluator.baseline
    if baseline == "latest_blessed":
        return {"baseline_model_uri": None}  # Until the run resolves it.
    if baseline == "none":
        return {"baseline_model_uri": None, "no_baseline_reason": "evaluator.baseline is none"}
    path = Path(baseline).expanduser().resolve()
    if not (path / "model.keras").is_file():
        raise ConfigError(
            [
                f"evaluator.baseline: {baseline!r} is not a Model folder (no model.keras); "
                "use latest_blessed, none or a Model artifact path such as runs/demo/<run_id>/train/model"
            ],
            config.source,
        )
    return {"baseline_model_uri": str(path)}


def absolute(path: str | None) -> str | None:
    """Local paths are relative to the working directory; the cache key needs them absolute. A URI (gs://, s3://)
    stays as it is."""
    if path is None or "://" in path:
        return path
    return str(Path(path).expanduser().resolve())
