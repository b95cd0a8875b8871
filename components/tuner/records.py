"""What a search leaves in its HyperParameters artifact: the trials (JSON and CSV), the best settings, a plot."""

from __future__ import annotations

import csv
import json
import logging
from pathlib import Path
from typing import Any

import optuna

from kflow.components.util.tuned_settings import apply_settings, shown_value
from kflow.pipeline.dsl.artifacts import HyperParameters

log = logging.getLogger("kflow.tuner")

STATES = {
    "completed": optuna.trial.TrialState.COMPLETE,
    "pruned": optuna.trial.TrialState.PRUNED,
    "failed": optuna.trial.TrialState.FAIL,
}


def finish(
    output: HyperParameters, records: list[dict], objective: dict[str, str], trainer: dict, refused: dict | None = None
) -> dict[str, Any]:
    """Writes the trials, the plot and the best settings; returns the search's summary. A ValueError when no trial
    completed (the trials' records and plot are written first, to look into): the module's one line where the
    search stopped at a trial it `refused` before training (executor._refused)."""
    metric, direction = objective["metric"], objective["direction"]
    records = sorted(records, key=lambda record: record["number"])
    write_trials(output, records)
    plot_objective(output, records, metric, direction)
    counts = {state: sum(record["state"] == state for record in records) for state in STATES}
    completed = [record for record in records if record["state"] == "completed"]
    if not completed and refused is not None:
        raise ValueError(
            f"{refused['error'].split(': ', 1)[-1]} (the search stopped at trial {refused['number']}: trials of "
            "other settings failed alike before their first score, as every trial would)"
        )
    if not completed:
        errors = [record["error"] for record in records if record["error"]]
        raise ValueError(
            f"no trial of the search completed ({counts['pruned']} pruned, {counts['failed']} failed)"
            + (f"; the first failure: {errors[0]}" if errors else "")
        )
    pick = min if direction == "minimize" else max
    best = pick(completed, key=lambda record: record["value"])  # the first of equals: the earliest trial
    write_best(output, best, objective, apply_settings(trainer, best["settings"]))
    log.info(
        "tune: best trial %d: %s=%.4f with %s (%s)",
        best["number"],
        metric,
        best["value"],
        shown(best["settings"]),
        ", ".join(f"{count} {state}" for state, count in counts.items()),
    )
    return {"best_trial": best["number"], "best_value": best["value"], **{f"trials_{s}": n for s, n in counts.items()}}


def shown(settings: dict[str, Any]) -> str:
    """A trial's settings as its log line says them: `optimizer.learning_rate=0.001235, batch_size=32`."""
    return ", ".join(f"{key.removeprefix('trainer.')}={shown_value(value)}" for key, value in sorted(settings.items()))


def write_trials(output: HyperParameters, trials: list[dict[str, Any]]) -> None:
    """trials.json (each trial whole, with its curve) and trials.csv (one row a trial, a column a setting)."""
    output.write_json("trials.json", trials)
    settings = sorted({key for trial in trials for key in trial["settings"]})
    columns = ["number", "state", "value", "epochs", "seconds", *settings, "error"]
    with open(output.path / "trials.csv", "w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(columns)
        for trial in trials:
            row = {**trial, **{key: json.dumps(value) for key, value in trial["settings"].items()}}
            writer.writerow(["" if row.get(column) is None else row[column] for column in columns])


def write_best(output: HyperParameters, best: dict[str, Any], objective: dict[str, Any], parameters: dict) -> None:
    output.write_json(
        "best.json",
        {
            "settings": best["settings"],
            "parameters": parameters,
            "objective": {**objective, "value": best["value"]},
            "trial": best["number"],
        },
    )


def plot_objective(output: HyperParameters, trials: list[dict[str, Any]], metric: str, direction: str) -> Path:
    """objective.png: each trial's objective by trial number, by how it ended, and the best so far."""
    import matplotlib

    matplotlib.use("Agg")  # headless, as components/util/plots.py draws
    import matplotlib.pyplot as plt

    fig, axis = plt.subplots(figsize=(7, 4))
    styles = {"completed": ("o", "tab:blue"), "pruned": ("x", "tab:orange"), "failed": ("s", "tab:red")}
    for state, (marker, colour) in styles.items():
        shown = [(t["number"], t["value"] if t["value"] is not None else t.get("last")) for t in trials]
        points = [(n, v) for (n, v), t in zip(shown, trials, strict=True) if t["state"] == state and v is not None]
        if points:
            axis.scatter(*zip(*points, strict=True), marker=marker, color=colour, label=f"{state} ({len(points)})")
    completed = [(t["number"], t["value"]) for t in sorted(trials, key=lambda t: t["number"]) if t["value"] is not None]
    if completed:
        best, steps = None, []
        for number, value in completed:
            better = best is None or (value < best if direction == "minimize" else value > best)
            best = value if better else best
            steps.append((number, best))
        axis.step(*zip(*steps, strict=True), where="post", color="tab:green", label="best so far")
    axis.set_xlabel("trial")
    axis.set_ylabel(f"{metric} (a pruned trial: its last epoch's)")
    axis.set_title(f"Objective by trial ({direction} {metric})")
    if axis.get_legend_handles_labels()[0]:  # no trial with a value: nothing to name (matplotlib warned)
        axis.legend(loc="center left", bbox_to_anchor=(1.01, 0.5))
    path = output.path / "objective.png"
    fig.savefig(path, bbox_inches="tight", dpi=100)
    plt.close(fig)
    return path
