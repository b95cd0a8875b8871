"""`trainer.warm_start` in `kflow run`: which earlier model the Trainer starts from, resolved when it is about to run.

    latest_blessed   the newest blessed model of this pipeline (the same name, dataset, task, label and
                     data.source.path: latest_blessed.model_identity) that was trained on other data than this
                     run's Examples (the same file grown, a new span); a model of another file: by its run id
    <run id>         the model the `train` node of that run of this pipeline trained (or reused)
    <path>           a Model folder (runs/<pipeline>/<run id>/train/model, of any pipeline: a value with a "/")

"Other data" keeps a re-run cached: the model a run blesses is the latest blessed one for the next run, and a
Trainer resolved to it would train again on unchanged data, again and again; so the model trained on these very
Examples is passed over, and a re-run of an unchanged span resolves what it resolved before. Resolved into the
Trainer's parameters `warm_start_model_uri` (in its cache key) and `warm_start_reason` (why none, said in the log).
The Trainer checks that the model is compatible (components/trainer/warm_start.py). A compiled pipeline resolves
nothing: its Trainer trains from scratch under latest_blessed, as `kflow compile` notes (commands.COMPILED_WARM_START).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from kflow.pipeline.app.latest_blessed import blessed_model, model_identity
from kflow.pipeline.dsl.artifacts import Model
from kflow.pipeline.dsl.config import ConfigError, PipelineConfig
from kflow.pipeline.runners.run_record import Run, earlier_runs


def warm_start_resolver(pipeline_dir: Path, config: PipelineConfig) -> Callable[[dict[str, str]], dict] | None:
    """The Trainer's run-time parameters for `trainer.warm_start`, or None when it is unset. A run id that names no
    run of the pipeline, or a run without a trained model: ConfigError naming the field."""
    setting = config.trainer.warm_start
    if not setting:
        return None
    if setting == "latest_blessed":
        identity = model_identity(config.to_dict(), table=True)
        return lambda inputs: newest_blessed(pipeline_dir, identity, inputs.get("examples"))
    try:
        uri = model_folder(setting) if "/" in setting else run_model(pipeline_dir, setting)
    except ValueError as error:
        raise ConfigError([str(error)], config.source) from None
    return lambda _inputs: {"warm_start_model_uri": uri, "warm_start_reason": None}


def model_folder(path: str) -> str:
    """A Model folder given by its path (another pipeline's, a copied one); ValueError (one line) otherwise."""
    folder = Path(path).expanduser()
    if not Model(folder).keras_file.is_file():
        raise ValueError(
            f"trainer.warm_start: {path} holds no trained model (model.keras): give a Model folder, such as "
            "runs/<pipeline>/<run id>/train/model, or a run id of this pipeline"
        )
    return str(folder.resolve())


def run_model(pipeline_dir: Path, run_id: str) -> str:
    """The folder of the model run `run_id` trained; ValueError (one line) otherwise."""
    runs = list(earlier_runs(pipeline_dir))
    run = next((run for run in runs if run.run_id == run_id), None)
    if run is None:
        known = ", ".join(run.run_id for run in runs[:3]) or "none yet"
        raise ValueError(f"trainer.warm_start: no run {run_id!r} under {pipeline_dir} (newest: {known})")
    for execution in run.executions.values():
        models = [ref for ref in execution.outputs.values() if ref.type == Model.type_name]
        if execution.finished and models and Model(models[0].uri).keras_file.is_file():
            return models[0].uri
    raise ValueError(f"trainer.warm_start: run {run_id!r} has no trained model (its status: {run.status})")


def newest_blessed(pipeline_dir: Path, identity: dict[str, Any], examples: str | None) -> dict[str, Any]:
    for run in earlier_runs(pipeline_dir):
        found = blessed_model(run)
        if found is None or model_identity(run.metadata.get("config") or {}, table=True) != identity:
            continue
        _, model, _ = found
        if examples is not None and _trained_on(run, model.uri) == examples:
            continue  # trained on these very Examples: this run's own model, or one a re-run would train again
        return {"warm_start_model_uri": model.uri, "warm_start_reason": None}
    reason = f"no earlier run of {identity['name']!r} blessed a model trained on other data"
    if identity.get("data.source.path"):  # a model of another table is no start (give its run id to start from it)
        reason = f"{reason} of data.source.path {identity['data.source.path']!r}"
    return {"warm_start_model_uri": None, "warm_start_reason": reason}


def _trained_on(run: Run, model_uri: str) -> str | None:
    """The fingerprint of the Examples the model at `model_uri` was trained on, from its producer in `run`."""
    for execution in run.executions.values():
        if any(ref.uri == model_uri for ref in execution.outputs.values()) and "examples" in execution.inputs:
            return execution.inputs["examples"].fingerprint
    return None
