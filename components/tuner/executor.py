"""Tuner executor: an Optuna study whose trials are processes training with the Trainer's executor.

Ask and tell: this process asks the study for each trial's settings (the sampler sees every trial told so far),
starts the trial's process (trial.py) with them, at most `parallel_trials` at a time, and tells the study how
each ended. The study lives in a journal file in the output (`study.journal`, Optuna's JournalStorage), which the
trial processes open too: they report each epoch's objective there, and the pruner, reading every trial's
reports, says when a trial falls behind. A trial that fails is recorded and told as failed; the search fails only
when no trial completes, and stops once the module refused two trials of different settings before training, with
the same words, while none has trained (every trial would be refused the same: one line, the module's).
"""

from __future__ import annotations

import logging
import shutil
import time
from pathlib import Path
from typing import Any

import optuna

from kflow.components.tuner.records import STATES, finish, shown
from kflow.components.tuner.search_space import (
    direction_of,
    distributions,
    sampler_and_pruner,
    settings_of,
    trial_trainer,
)
from kflow.components.tuner.trial_processes import TrialProcess, TrialProcesses
from kflow.components.util.corrupt_examples import reads_examples
from kflow.components.util.tuned_settings import apply_settings
from kflow.pipeline.dsl.artifacts import ExampleAnomalies, Examples, HyperParameters, Schema, TransformGraph
from kflow.pipeline.dsl.scratch import scratch_dir

log = logging.getLogger("kflow.tuner")


@reads_examples
def run(
    *,
    examples: Examples,
    schema: Schema,
    hyperparameters: HyperParameters,
    working_dir: Path | None = None,
    anomalies: ExampleAnomalies | None = None,
    transform_graph: TransformGraph | None = None,
    search_space: dict[str, dict[str, Any]],
    algorithm: str,
    max_trials: int,
    max_time: float | None,
    objective_metric: str,
    objective_direction: str | None,
    parallel_trials: int,
    seed: int,
    trainer: dict[str, Any],
    trainer_executor: str,
    trial_epochs: int | None = None,
) -> dict[str, Any]:
    """Runs up to `max_trials` trials (none started after `max_time` seconds) and writes the best settings, the
    trials and the objective's plot into `hyperparameters`; returns the best trial's number and objective and the
    count of trials by how they ended."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)  # kflow logs each trial itself
    direction = direction_of(objective_metric, objective_direction)
    objective = {"metric": objective_metric, "direction": direction}
    output = hyperparameters.path
    output.mkdir(parents=True, exist_ok=True)
    journal = str(output / "study.journal")
    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(journal))
    trials = trial_trainer(trainer, trial_epochs)  # what each trial trains with, but its settings
    sampler, pruner = sampler_and_pruner(algorithm, seed, int(trials.get("epochs") or 1))
    study = optuna.create_study(
        study_name="tuner", storage=storage, sampler=sampler, pruner=pruner, direction=direction
    )
    space = distributions(search_space)
    scratch = Path(scratch_dir("tuner")) if working_dir is None else Path(working_dir) / "trials"
    shutil.rmtree(scratch, ignore_errors=True)  # a re-run searches afresh (the journal is the new output's)
    log.info(
        "tune: %s over %s, %d trials (%d at a time)%s%s, %s %s",
        algorithm,
        ", ".join(search_space),
        max_trials,
        parallel_trials,
        f" of {trial_epochs} epoch(s) each (the Trainer then trains {trainer.get('epochs')})" if trial_epochs else "",
        f", none started after {max_time:g} s" if max_time else "",
        direction,
        objective_metric,
    )
    records: list[dict[str, Any]] = []
    asked: dict[int, tuple[optuna.Trial, dict[str, Any]]] = {}
    started = time.monotonic()
    try:
        with TrialProcesses(parallel=parallel_trials) as processes:
            while True:
                in_time = max_time is None or time.monotonic() - started < max_time
                refused = _refused(records)
                while in_time and not refused and len(asked) < max_trials and len(processes.running) < parallel_trials:
                    trial = study.ask(space)
                    settings = settings_of(trial.params, search_space)
                    asked[trial.number] = (trial, settings)
                    spec = {
                        "examples": examples.uri,
                        "schema": schema.uri,
                        "anomalies": anomalies.uri if anomalies is not None else None,
                        "transform_graph": transform_graph.uri if transform_graph is not None else None,
                        "parameters": apply_settings(trials, settings),
                        "trainer_executor": trainer_executor,
                        "storage": journal,
                        "study": study.study_name,
                        "algorithm": algorithm,
                        "seed": seed,
                        "trial_id": trial._trial_id,
                        "objective": objective,
                        "folder": str(scratch / str(trial.number)),
                    }
                    processes.start(trial.number, scratch / str(trial.number), spec)
                if not processes.running:
                    break
                ended = processes.next_ended()
                records.append(_tell(study, ended, *asked[ended.number], output, objective_metric))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)  # the trials' models and checkpoints: only their records stay
    return finish(hyperparameters, records, objective, trainer, _refused(records))


def _refused(records: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The trial at which the search stops, refused by the module before training (its model not built: a name
    Keras refuses, a loss() that fails), or None. It stops only while no trial has trained, and once two trials of
    different settings were refused with the same words: then the refusal is the module's on this data, whatever
    the settings. A refusal of some settings only (a `units: 0` in the space) lets the others try; once a trial
    trains, every refusal is its settings' own, as any failed trial."""
    if any(record["epochs"] or record["state"] != "failed" for record in records):
        return None
    refusals = [record for record in records if record.get("refused")]
    for later in refusals:
        for earlier in refusals:
            if earlier["number"] < later["number"] and _alike(earlier, later):
                return later
    return None


def _alike(earlier: dict[str, Any], later: dict[str, Any]) -> bool:
    """Two refusals whose words are the same and whose settings are not."""
    return earlier["error"] == later["error"] and earlier["settings"] != later["settings"]


def _tell(study: optuna.Study, ended: TrialProcess, trial: optuna.Trial, settings: dict, output: Path, metric: str):
    """Tells the study how a trial ended, keeps its log (and traceback) in the output, and returns its record."""
    result = ended.result()
    state = result["state"]
    study.tell(trial, result["value"] if state == "completed" else None, state=STATES[state])
    kept = output / "trials" / str(ended.number)
    kept.mkdir(parents=True, exist_ok=True)
    for name in ("trial.log", "error.log"):
        if (ended.folder / name).is_file():
            shutil.copyfile(ended.folder / name, kept / name)
    score = f"{metric}={result['value']:.4f}" if result["value"] is not None else ""
    ending = {"completed": score, "pruned": f"after epoch {result['epochs']}", "failed": result["error"]}[state]
    log.info("tune: trial %d %s %s (%s) in %.1f s", ended.number, state, ending, shown(settings), result["seconds"])
    return {"number": ended.number, "settings": settings, **result}
