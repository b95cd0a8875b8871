"""One trial: `python -m kflow.components.tuner.trial SPEC.json`, or one after another in a trial worker
(`--worker EXECUTOR FOLDER`: its libraries loaded once, it reads each spec's path on stdin).

It trains with the Trainer's executor (named in the spec by import path) on a view of the Examples that holds
Split-train and Split-eval only, so the test split cannot be read; after each epoch (components/util/
epoch_report.py) it records the epoch's metrics, reports the objective to the Optuna study in the journal the
tuner shares with its trials, and stops when the study's pruner says so. It writes `result.json` beside the spec:
{"state": completed | pruned | failed, "value", "curve", "seconds", "error"}; the tuner tells the study.
"""

from __future__ import annotations

import importlib
import json
import logging
import math
import os
import sys
import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

TRAIN_SPLITS = ("train", "eval")


class TrialTrained(Exception):
    """Raised after a trial's last epoch is scored, to end the Trainer before it exports a model nobody reads."""


class ObjectiveNotReported(ValueError):
    """The training reports no objective.metric: the search's own mistake, not its settings' (a refusal)."""


def examples_view(examples_uri: str, folder: Path) -> Path:
    """A folder of links to the Examples' Split-train, Split-eval and their other files (stats.json, ...), not to
    any other split: what a trial reads holds no test split."""
    source = Path(examples_uri)
    folder.mkdir(parents=True, exist_ok=True)
    for entry in source.iterdir():
        split = entry.name.removeprefix("Split-") if entry.name.startswith("Split-") else None
        if split is not None and split not in TRAIN_SPLITS:
            continue
        link = folder / entry.name
        if not link.exists():
            link.symlink_to(entry.resolve(), target_is_directory=entry.is_dir())
    return folder


def trial_value(curve: list[dict[str, float]], metric: str, direction: str, best_epoch_kept: bool) -> float | None:
    """The objective of a trial: what the model the Trainer ends with scores, the last epoch's, or the best epoch's
    where early stopping keeps the best epoch's weights (`best_epoch_kept`); None when no epoch scored a number."""
    values = [epoch[metric] for epoch in curve if metric in epoch and math.isfinite(epoch[metric])]
    if not values:
        return None
    if not best_epoch_kept:
        return values[-1] if math.isfinite(curve[-1].get(metric, math.nan)) else None
    return min(values) if direction == "minimize" else max(values)


def _cluster_curve(model_run: Any) -> list[dict[str, float]]:
    """The epochs' metrics a training's history holds (`per_epoch`), as the listener hears them."""
    if not (model_run.path / "history.json").is_file():
        return []
    epochs = model_run.history.get("per_epoch") or []
    return [
        {"epoch": int(epoch["epoch"]), **{name: float(value) for name, value in epoch.items()
                                          if name != "epoch" and isinstance(value, int | float)}}
        for epoch in epochs
    ]  # fmt: skip


def run_trial(spec: dict[str, Any]) -> dict[str, Any]:
    import optuna

    from kflow.components.tuner.search_space import sampler_and_pruner
    from kflow.components.util.epoch_report import listening
    from kflow.pipeline.dsl.artifacts import ExampleAnomalies, Model, ModelRun, Schema, TransformGraph

    folder = Path(spec["folder"])
    metric, direction = spec["objective"]["metric"], spec["objective"]["direction"]
    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(spec["storage"]))
    # The tuner's pruner: load_study's default would be the median pruner, whatever the tuner's algorithm.
    _, pruner = sampler_and_pruner(spec["algorithm"], spec["seed"], int(spec["parameters"].get("epochs") or 1))
    study = optuna.load_study(study_name=spec["study"], storage=storage, pruner=pruner)
    trial = optuna.Trial(study, spec["trial_id"])
    curve: list[dict[str, float]] = []
    epochs = int(spec["parameters"].get("epochs") or 1)

    def hear(epoch: int, metrics: dict[str, float]) -> None:
        if metric not in metrics:  # before its epoch is counted: no trial of this search would have a score
            known = ", ".join(sorted(name for name in metrics if name.startswith("val_")))
            raise ObjectiveNotReported(
                f"objective.metric {metric!r} is not a validation metric of this training ({known})"
            )
        curve.append({"epoch": epoch, **{name: float(value) for name, value in metrics.items()}})
        trial.report(float(metrics[metric]), epoch)
        # After the last epoch there is nothing left to save: the trial completes (Hyperband's top rung is the last
        # epoch, where its pruner would otherwise stop a trial that has run all its epochs).
        if epoch < epochs and trial.should_prune():
            raise optuna.TrialPruned(f"pruned after epoch {epoch}")
        if epoch == epochs:  # scored: the model's export (model.keras, the serving SavedModel) is of no use here
            raise TrialTrained()

    module, function = spec["trainer_executor"].split(":")
    train = getattr(importlib.import_module(module), function)
    started = time.perf_counter()
    result: dict[str, Any] = {"state": "completed", "error": None}
    try:
        with listening(hear):
            train(
                examples=_examples(spec, folder),
                schema=Schema(spec["schema"]),
                **({"anomalies": ExampleAnomalies(spec["anomalies"])} if spec.get("anomalies") else {}),
                **({"transform_graph": TransformGraph(spec["transform_graph"])} if spec.get("transform_graph") else {}),
                model=Model(folder / "model"),
                model_run=ModelRun(folder / "model_run"),
                working_dir=folder / "work",
                **spec["parameters"],
            )
        # A local cluster trains in its own processes, whose epochs reach no listener here: the trial is scored on
        # the history its training wrote (unpruned, as docs/tuning.md says).
        curve = curve or _cluster_curve(ModelRun(folder / "model_run"))
    except TrialTrained:
        pass  # completed
    except optuna.TrialPruned:
        result["state"] = "pruned"
    except Exception as error:  # Recorded, not fatal: the search goes on with the other trials (but a refusal).
        from kflow.components.datasets.user_module import UserModuleError

        result.update(state="failed", error=f"{type(error).__name__}: {error}")
        # The module refused before training (its model not built), or the objective is not reported: the tuner
        # may stop the search (executor.py).
        result["refused"] = isinstance(error, UserModuleError | ObjectiveNotReported) and not curve
        (folder / "error.log").write_text(traceback.format_exc())
    result.update(
        curve=curve,
        epochs=len(curve),
        value=trial_value(curve, metric, direction, spec["parameters"].get("early_stopping_patience") is not None)
        if result["state"] == "completed"
        else None,
        last=curve[-1].get(metric) if curve else None,
        seconds=round(time.perf_counter() - started, 3),
    )
    if result["state"] == "completed" and result["value"] is None:
        result.update(state="failed", error=f"objective.metric {metric!r} ended the training as no number")
    return result


def _examples(spec: dict[str, Any], folder: Path) -> Any:
    from kflow.pipeline.dsl.artifacts import Examples

    return Examples(examples_view(spec["examples"], folder / "examples"))


def serve(trainer_executor: str, stdin: Any = None) -> int:
    """A trial worker (`--worker EXECUTOR [SEARCH FOLDER]`): loads what a trial runs once (TensorFlow, Keras,
    Optuna, the trainer's executor by its import path: a component imports no other), then runs one trial a spec
    path read on stdin, each with its output in the trial's own log, until stdin ends. A trial costs its training,
    not a process's start and 4 s of imports (on 2 cores, a spare process started ahead took that CPU from the
    running trials). Between trials Keras' global state is cleared; each training seeds itself (`trainer.seed`), so
    a trial's result does not depend on the worker it ran in."""
    import keras
    import optuna  # noqa: F401
    import tensorflow  # noqa: F401

    importlib.import_module(trainer_executor.split(":")[0])
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S", force=True)
    for line in stdin or sys.stdin:
        if not line.strip():
            break
        spec_file = Path(line.strip())
        with _output_to(spec_file.with_name("trial.log")):
            _write_result(spec_file, run_trial(json.loads(spec_file.read_text())))
        keras.backend.clear_session(free_memory=True)
    return 0


@contextmanager
def _output_to(log_file: Path) -> Iterator[None]:
    """This process's stdout and stderr (TensorFlow's C++ logs too: file descriptors 1 and 2) into `log_file`."""
    sys.stdout.flush()
    sys.stderr.flush()
    kept = os.dup(1), os.dup(2)
    log = os.open(log_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    try:
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(kept[0], 1)
        os.dup2(kept[1], 2)
        os.close(kept[0])
        os.close(kept[1])


def main(argv: list[str]) -> int:
    if argv[0] == "--worker":
        return serve(argv[1])
    spec_file = Path(argv[0])
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    _write_result(spec_file, run_trial(json.loads(spec_file.read_text())))
    return 0


def _write_result(spec_file: Path, result: dict[str, Any]) -> None:
    """`result.json` beside the spec: whole, or not there (the tuner polls for it)."""
    written = spec_file.with_name("result.json.partial")
    written.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    os.replace(written, spec_file.with_name("result.json"))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
