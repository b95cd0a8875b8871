"""Which trained model `kflow predict` scores with (`--model`): the latest blessed one of the config's pipeline, a
run's, a Model folder or a pushed one (docs/predict.md)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kflow.pipeline.app.latest_blessed import blessed_model, described, model_identity, passed_over
from kflow.pipeline.dsl.artifacts import Model
from kflow.pipeline.dsl.config import ConfigError, PipelineConfig
from kflow.pipeline.runners.run_record import RUN_FILE, Run, earlier_runs

LATEST = ("latest", "latest_blessed")


@dataclass(frozen=True)
class ChosenModel:
    model: Model
    origin: str  # for people: "the latest blessed model (run …)", "run …'s train", "the folder …"
    run_dir: str | None = None  # the run that trained or blessed it, when known: its statistics, its schema


def choose_model(config: PipelineConfig, spec: str | None) -> ChosenModel:
    """The model `--model` names: latest (the default: the latest blessed), a run id or folder, or a Model folder."""
    pipeline_dir = Path(config.pipeline_root) / config.name
    if spec is None or spec in LATEST:
        return _latest_blessed(config, pipeline_dir)
    path = Path(spec).expanduser()
    if (path / RUN_FILE).is_file():
        return _model_of_run(Run.load(path))
    if (path / "model.keras").is_file():
        return ChosenModel(Model(str(path.resolve())), f"the model folder {path}")
    versions = sorted((int(p.name) for p in path.glob("[0-9]*") if p.name.isdigit()), reverse=True)
    if not (path / "saved_model.pb").is_file() and versions and (path / str(versions[0]) / "saved_model.pb").is_file():
        path = path / str(versions[0])  # a push destination's model folder: its newest version
    if (path / "saved_model.pb").is_file():
        if not Model(str(path)).training_schema_file.is_file():
            raise ConfigError(
                [
                    f"--model: {path} is a serving SavedModel without kflow's assets (assets/task.json, "
                    f"assets/{Model.SCHEMA_FILE}): pushed by an earlier kflow; give the run that trained it"
                ]
            )
        return ChosenModel(Model(str(path.resolve())), f"the pushed model {path}")
    if "/" not in spec and (pipeline_dir / spec / RUN_FILE).is_file():
        return _model_of_run(Run.load(pipeline_dir / spec))
    raise ConfigError(
        [
            f"--model: {spec!r} is neither latest, a run of {config.name!r} (under {pipeline_dir}), a run folder nor a "
            "Model folder (holding model.keras)"
        ]
    )


def _latest_blessed(config: PipelineConfig, pipeline_dir: Path) -> ChosenModel:
    """The latest blessed model of the config's pipeline, label and task; of those, first one trained on the config's
    data.source.path: runs of one config on several tables (table.yaml with --set data.source.path) share them."""
    settings = config.to_dict()
    identity, source = model_identity(settings), _source_path(settings)
    other: tuple[ChosenModel, str | None] | None = None
    others = []  # the identities of the blessed models of another label, task or dataset
    for run in earlier_runs(pipeline_dir):
        found = blessed_model(run)
        run_config = run.metadata.get("config") or {}
        if found is None:
            continue
        run_identity = model_identity(run_config)
        if run_identity != identity:
            others.append(run_identity)  # said when no blessed model is of the config's identity
            continue
        execution, model, _ = found
        origin = f"the latest blessed model (run {run.run_id}, blessed by {execution.node_id})"
        chosen = ChosenModel(Model(model.uri), origin, str(run.run_dir))
        if _source_path(run_config) == source:
            if other is not None:  # a newer one, of another table (retrained with --set data.source.path=…)
                newer, trained_on = other
                newer_run = Path(newer.run_dir).name
                said = (f"{chosen.origin[:-1]}; a newer one, run {newer_run}, was trained on {trained_on}: "
                        f"--model {newer_run} scores with it)")  # fmt: skip
                return replace(chosen, origin=said)
            return chosen
        other = other or (chosen, _source_path(run_config))
    if other is not None:
        chosen, trained_on = other
        said = f"{chosen.origin[:-1]}, trained on {trained_on}: no blessed model was trained on {source})"
        return replace(chosen, origin=said)
    said = f"--model: no run of {config.name!r} under {pipeline_dir} blessed a model"
    if others:  # runs the user sees blessed in `kflow runs`, of another label (--set data.label=…) or task
        said += f" of {described(identity)} ({passed_over(identity, others)}: give --model RUN_ID to score with one)"
    else:
        said += ": run the pipeline first, or give --model RUN_ID|RUN_FOLDER|MODEL_FOLDER"
    raise ConfigError([said])


def _source_path(settings: dict[str, Any]) -> str | None:
    return model_identity(settings, table=True).get("data.source.path")  # one file however spelled


def _model_of_run(run: Run) -> ChosenModel:
    trained = [
        (execution, ref)
        for execution in run.executions.values()
        if execution.finished
        for ref in execution.outputs.values()
        if ref.type == Model.type_name
    ]
    if not trained:
        raise ConfigError([f"--model: the run {run.run_dir} trained no model (no finished component output one)"])
    if len(trained) > 1:
        folders = ", ".join(ref.uri for _, ref in trained)
        raise ConfigError(
            [f"--model: the run {run.run_dir} trained {len(trained)} models: give one's folder ({folders})"]
        )
    execution, ref = trained[0]
    return ChosenModel(Model(ref.uri), f"run {run.run_id}'s {execution.node_id}", str(run.run_dir))


def unrun_preparation(chosen: ChosenModel) -> str | None:
    """Why new rows are not prepared as the model's training examples were: it was trained on the output of a node of
    its run other than an ingest (a declared pipeline's own node, `cap`), which `kflow predict` does not run; None
    where it was trained on an ingest's examples (or nothing says which)."""
    if not chosen.run_dir or not (Path(chosen.run_dir) / RUN_FILE).is_file():
        return None
    run = Run.load(Path(chosen.run_dir))
    trainer = next((e for e in run.executions.values() if any(r.uri == chosen.model.uri for r in e.outputs.values())),
                   None)  # fmt: skip
    examples = trainer.inputs.get("examples") if trainer else None
    producer = run.executions.get(Path(examples.uri).parent.name) if examples else None
    # kflow's own nodes that make Examples: an ingest (its source_path), the union of a pipeline's spans (spans)
    if producer is None or producer.parameters.get("source_path") or "spans" in producer.parameters:
        return None
    return (f"the model was trained on the examples of node {producer.node_id!r}, which prepares the ingest's: kflow "
            "predict does not run it, so new rows are scored as the ingest reads them, not as that node made them "
            "(a declared pipeline's predict node after it scores them as trained)")  # fmt: skip
