"""What the evaluated model was trained with, for the report's "Trained with" section.

Read from what the run recorded, never from the config the Evaluator was given (a cached model may come from
an earlier run with other settings): the Model's own assets (`task.json`: the model and its options; a Tuner's
`hyperparameters` in its metadata.json), the ModelRun's `history.json`, the Examples' `stats.json` (rows
per split, rejects) and `spans` where the Examples record them, and, where the artifacts sit in a kflow run
folder (`kflow run`), that run's `run.json`: the Trainer's parameters, the ingest's source files and the
Transform graph the Trainer took (its analyzers.json), from the run that produced each artifact. On Kubeflow
there is no run.json beside an artifact; the section then shows what the artifacts themselves hold.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kflow.pipeline.dsl.artifacts import Artifact, Examples, Model, ModelRun

# The Trainer's parameters that shape the model, in the order a reader looks for them.
TRAINER_SETTINGS = (
    "model_name",
    "model_options",
    "module",
    "strategy",
    "epochs",
    "batch_size",
    "steps_per_epoch",
    "optimizer",
    "learning_rate",
    "weight_decay",
    "schedule",
    "warmup_steps",
    "early_stopping_patience",
    "early_stopping_min_steps",
    "early_stopping_monitor",
    "mixed_precision",
    "seed",
)
_CLUSTER_SETTINGS = ("workers", "parameter_servers")


def trained_with(model: Model, model_run: ModelRun | None, examples: Examples) -> dict[str, Any]:
    """{"model": {setting: value}, "tuned": {setting: value} | None, "data": {...}, "run": {...}}."""
    task = _read_json(model.assets_uri / Model.TASK_FILE)
    history = _read_json(model_run.path / "history.json") if model_run is not None else {}
    history.pop("per_epoch", None)
    trainer = producer(model)
    settings: dict[str, Any] = {}
    if trainer is not None:
        parameters = trainer.get("parameters") or {}
        multi_process = (history.get("processes") or 1) > 1
        for name in (*TRAINER_SETTINGS, *(_CLUSTER_SETTINGS if multi_process else ())):
            if parameters.get(name) not in (None, {}, ""):
                settings[name] = parameters[name]
        settings["trained in run"] = trainer.get("run_id")
    else:  # no run record beside the model: what its assets and history say
        settings = {"model_name": task.get("model_name"), "model_options": task.get("model_options") or None}
        settings |= {key: history.get(key) for key in ("strategy", "epochs", "batch_size")}
        settings = {key: value for key, value in settings.items() if value is not None}
    return {
        "model": settings,
        "tuned": _tuned(model),
        "data": data_seen(examples),
        "transform": _transform(trainer),
        "history": history,
    }


def _transform(trainer: dict[str, Any] | None) -> dict[str, Any] | None:
    """The Transform the model was trained behind (the Trainer's `transform_graph` input), from its graph's
    analyzers.json and the run that learnt it; None when it was trained without one, or nothing recorded it."""
    graph = ((trainer or {}).get("inputs") or {}).get("transform_graph")
    if not isinstance(graph, Mapping) or not graph.get("uri"):
        return None
    folder = Path(graph["uri"])
    analyzers = _read_json(folder / "analyzers.json")
    shown: dict[str, Any] = {"graph": str(folder), "analyzers": len(analyzers.get("analyzers") or {})}
    features = analyzers.get("features")
    if features:
        shown["features"] = len(features)
    if analyzers.get("left_out"):
        shown["left out"] = analyzers["left_out"]
    if (folder / "preprocessing_fn.py").is_file():
        shown["module"] = "preprocessing_fn.py (transform.module)"
    learnt = producer(Artifact(str(folder)))
    if learnt is not None:
        shown["learnt in run"] = learnt.get("run_id")
    return shown


def data_seen(examples: Examples) -> dict[str, Any]:
    """Rows per split, the source files, spans and rejected rows of the Examples."""
    stats = _read_json(examples.path / "stats.json")
    data: dict[str, Any] = {"rows": dict(stats.get("accepted") or {}), "read": stats.get("read")}
    rejected = {
        f"{kind}: {reason}": count
        for kind in ("invalid", "filtered")
        for reason, count in (stats.get(kind) or {}).items()
    }
    if rejected:
        data["rejected"] = rejected
    spans = _metadata(examples, "spans")
    if spans:
        data["spans"] = spans
    ingest = producer(examples)
    if ingest is not None:
        files = (ingest.get("data") or {}).get("files") or []
        data["sources"] = [entry["path"] for entry in files if entry.get("path")]
        if not data["sources"]:
            parameters = ingest.get("parameters") or {}
            source = parameters.get("source_path") or parameters.get("source")
            data["sources"] = [str(source)] if source else []
        data["ingested in run"] = ingest.get("run_id")
    return data


def producer(artifact: Artifact) -> dict[str, Any] | None:
    """The run record's entry of the component that wrote `artifact`, with the run's id: the artifact's run folder
    is `<run>/<component>/<output>` under `kflow run`. None elsewhere (Kubeflow, a folder of one's own)."""
    path = Path(artifact.uri)
    record = _read_json(path.parent.parent / "run.json")
    for entry in (record.get("components") or {}).values():
        outputs = entry.get("outputs") or {}
        if any(isinstance(output, Mapping) and output.get("uri") == artifact.uri for output in outputs.values()):
            return {**entry, "run_id": record.get("run_id")}
    return None


def _tuned(model: Model) -> Any:
    """The settings a Tuner chose, where the Model records them (a `hyperparameters` property or file)."""
    return _metadata(model, "hyperparameters")


def _metadata(artifact: Artifact, name: str) -> Any:
    """An artifact's `name` property: an attribute of its own, or a key of its `metadata.json` (a Model's
    `hyperparameters`, the Examples' `spans`); None where it has none."""
    try:
        value = getattr(artifact, name, None)
    except (OSError, ValueError, KeyError):  # a property over a file the artifact lacks
        value = None
    if value is None:
        value = _read_json(artifact.path / "metadata.json").get(name)
    return value or None


def _read_json(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}
