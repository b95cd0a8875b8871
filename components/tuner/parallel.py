"""The Tuner in a compiled pipeline: its trials as parallel tasks (`dsl.ParallelFor`), then one gathering task.

Each trial task opens the study in a journal on the shared volume (one folder a run and node), asks it for its
settings, trains in its own process (the pod) as a local trial does (trial.py: the view without the test split,
the per-epoch reports the pruner reads from every running trial) and tells the study how it ended, with its curve
as the trial's user attributes. Optuna's own pattern for workers on several machines: the study's storage is the
only thing they share. The gathering task reads the study and writes the HyperParameters a local search writes.
"""

from __future__ import annotations

import datetime
import logging
import shutil
from pathlib import Path
from typing import Any

from kflow.components.tuner.component import Tuner
from kflow.pipeline.dsl.artifacts import ExampleAnomalies, Examples, HyperParameters, Schema, TransformGraph
from kflow.pipeline.dsl.component import Component, ComponentSpec, Parameter
from kflow.pipeline.dsl.parallel_steps import ParallelSteps

log = logging.getLogger("kflow.tuner")

JOURNAL = "study.journal"
# The per-trial records a trial task keeps as its Optuna trial's user attributes, for the gathering task.
RECORDED = ("curve", "epochs", "seconds", "error", "last")


def search_parameters(spec_parameters: dict[str, Parameter]) -> dict[str, Parameter]:
    """The Tuner's parameters and where the study of a run lives: `study_dir`/<run_id>/study.journal."""
    return {
        **spec_parameters,
        "study_dir": Parameter(str, description="a folder on the volume the trial tasks share"),
        "run_id": Parameter(str, description="the run's id: its study's folder under study_dir"),
    }


def parallel_steps(tuner: Component, shared_dir: str) -> ParallelSteps:
    """The Tuner node `tuner` as `max_trials` trial tasks, `parallel_trials` at a time, and a gathering task."""
    parameters = {**tuner.parameters, "study_dir": f"{shared_dir}/kflow-tuner/{tuner.id}", "run_id": "local"}
    step = TunerTrial(f"{tuner.id}_trial", **_inputs(tuner), parameters={**parameters, "trial_index": 0})
    gather = TunerGather(tuner.id, parameters=parameters)
    return ParallelSteps(
        step, gather, tuner.parameters["max_trials"], tuner.parameters["parallel_trials"], "trial_index", "run_id"
    )


def _inputs(tuner: Component) -> dict[str, Any]:
    return {name: channel for name, channel in tuner.inputs.items()}


def journal_of(study_dir: str, run_id: str) -> Path:
    folder = Path(study_dir) / run_id
    folder.mkdir(parents=True, exist_ok=True)
    return folder / JOURNAL


def run_trial_task(
    *,
    examples: Examples,
    schema: Schema,
    working_dir: Path | None = None,
    anomalies: ExampleAnomalies | None = None,
    transform_graph: TransformGraph | None = None,
    study_dir: str,
    run_id: str,
    trial_index: int,
    **search: Any,
) -> dict[str, Any]:
    """One trial of the run's study, trained in this process; told to the study with its record."""
    import optuna

    from kflow.components.tuner.search_space import distributions, settings_of, trial_trainer
    from kflow.components.tuner.trial import run_trial
    from kflow.components.util.tuned_settings import apply_settings
    from kflow.pipeline.dsl.scratch import scratch_dir

    study = _study(journal_of(study_dir, run_id), search, seed_offset=trial_index)
    starts = [t.datetime_start for t in study.get_trials(deepcopy=False) if t.datetime_start]
    max_time = search.get("max_time")
    if max_time and starts and (datetime.datetime.now() - min(starts)).total_seconds() > max_time:
        log.info("tune: trial task %d: the search's max_time (%g s) is spent, no trial started", trial_index, max_time)
        return {"started": False}
    trial = study.ask(distributions(search["search_space"]))
    settings = settings_of(trial.params, search["search_space"])
    folder = Path(scratch_dir("tuner-trial") if working_dir is None else working_dir)
    spec = {
        "examples": examples.uri,
        "schema": schema.uri,
        "anomalies": anomalies.uri if anomalies is not None else None,
        "transform_graph": transform_graph.uri if transform_graph is not None else None,
        "parameters": apply_settings(trial_trainer(search["trainer"], search.get("trial_epochs")), settings),
        "trainer_executor": search["trainer_executor"],
        "storage": str(journal_of(study_dir, run_id)),
        "study": study.study_name,
        "algorithm": search["algorithm"],
        "seed": search["seed"],
        "trial_id": trial._trial_id,
        "objective": _objective(search),
        "folder": str(folder),
    }
    try:
        result = run_trial(spec)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    for name in RECORDED:
        trial.set_user_attr(name, result.get(name))
    states = {"completed": optuna.trial.TrialState.COMPLETE, "pruned": optuna.trial.TrialState.PRUNED}
    state = states.get(result["state"], optuna.trial.TrialState.FAIL)
    study.tell(trial, result["value"] if result["state"] == "completed" else None, state=state)
    log.info("tune: trial %d %s (%s)", trial.number, result["state"], result.get("error") or result.get("value"))
    return {"trial": trial.number, "state": result["state"], "value": result["value"]}


def run_gather(*, hyperparameters: HyperParameters, study_dir: str, run_id: str, **search: Any) -> dict[str, Any]:
    """The run's study as the HyperParameters a local search writes (its journal copied in)."""
    from kflow.components.tuner.records import finish
    from kflow.components.tuner.search_space import settings_of

    journal = journal_of(study_dir, run_id)
    study = _study(journal, search, seed_offset=0)
    states = {"COMPLETE": "completed", "PRUNED": "pruned"}
    records = [
        {
            "number": trial.number,
            "settings": settings_of(trial.params, search["search_space"]),
            "state": states.get(trial.state.name, "failed"),
            "value": trial.value if trial.state.name == "COMPLETE" else None,
            **{name: trial.user_attrs.get(name) for name in RECORDED},
        }
        for trial in study.get_trials(deepcopy=False)
    ]
    for record in records:
        record["error"] = record["error"] or (None if record["state"] != "failed" else "the trial task did not end")
    hyperparameters.path.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(journal, hyperparameters.path / JOURNAL)
    return finish(hyperparameters, records, _objective(search), search["trainer"])


def _objective(search: dict[str, Any]) -> dict[str, str]:
    from kflow.components.tuner.search_space import direction_of

    metric = search["objective_metric"]
    return {"metric": metric, "direction": direction_of(metric, search.get("objective_direction"))}


def _study(journal: Path, search: dict[str, Any], seed_offset: int) -> Any:
    """The run's study, created by whichever task comes first; each task's sampler seeded apart (`seed_offset`), so
    that tasks sampling at random at the same time do not draw the same settings."""
    import optuna

    from kflow.components.tuner.search_space import sampler_and_pruner, trial_trainer

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    epochs = int(trial_trainer(search["trainer"], search.get("trial_epochs")).get("epochs") or 1)
    sampler, pruner = sampler_and_pruner(search["algorithm"], search["seed"] + seed_offset, epochs)
    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(journal)))
    direction = _objective(search)["direction"]
    return optuna.create_study(
        study_name="tuner", storage=storage, sampler=sampler, pruner=pruner, direction=direction, load_if_exists=True
    )


def _search_spec() -> dict[str, Parameter]:
    return search_parameters(dict(Tuner.spec.parameters))


class TunerTrial(Component):
    """One trial of a compiled pipeline's search (a task of its ParallelFor)."""

    spec = ComponentSpec(
        inputs=dict(Tuner.spec.inputs),  # a trial trains on what the search was given
        optional_inputs=Tuner.spec.optional_inputs,
        outputs={},
        parameters={**_search_spec(), "trial_index": Parameter(int, description="the task's index in the loop")},
        executor="kflow.components.tuner.parallel:run_trial_task",
    )


class TunerGather(Component):
    """The best settings of a compiled pipeline's search, from its study (after every trial task)."""

    spec = ComponentSpec(
        outputs={"hyperparameters": HyperParameters},
        parameters=_search_spec(),
        executor="kflow.components.tuner.parallel:run_gather",
    )
