"""What a search leaves in its HyperParameters artifact: the trials (JSON and CSV), the best settings, a plot."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from kflow.pipeline.dsl.artifacts import HyperParameters


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
    axis.legend(loc="center left", bbox_to_anchor=(1.01, 0.5))
    path = output.path / "objective.png"
    fig.savefig(path, bbox_inches="tight", dpi=100)
    plt.close(fig)
    return path
