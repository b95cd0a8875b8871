"""The gauntlet's retraining step: the same table trained on its first rows, then on all of them warm-started.

As a user's table grows: OUT/<name>/retrain/ holds the table's first FIRST_SHARE of rows, trained from scratch with
the entry's config; then the whole table in the same file, trained with `trainer.warm_start: latest_blessed`. The
whole table is the entry's own data, so its splits and test rows are the entry's: the warm-started model's test
metric (`retrain_metric`) stands beside the entry's from-scratch one (`kflow`). What is checked: both runs exit 0
without a traceback, and the second says it warm-started (`retrain_warm`) and how its input columns were mapped.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import catalog
import yaml

FIRST_SHARE = 0.7


def check(folder: Path, table: catalog.Table, frame, fmt: str, config_file: Path, kflow, metric) -> dict:
    """`kflow(arguments, folder)` runs one kflow command there (run.py's `_kflow`: exit, line, traceback, stdout,
    stderr, run_folder); `metric(run_folder, task)` reads an evaluation's test metric."""
    retrain = folder / "retrain"
    shutil.rmtree(retrain, ignore_errors=True)  # trained again, not from an earlier gauntlet's cache
    retrain.mkdir()
    data = retrain / f"data.{fmt}"
    config = yaml.safe_load(config_file.read_text())
    config["data"]["source"]["path"] = str(data)
    config_path = retrain / config_file.name
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    root = ["--pipeline-root", str(retrain / "runs")]
    catalog.write(frame.iloc[: max(1, int(len(frame) * FIRST_SHARE))], data, fmt)
    first = kflow(["run", str(config_path), *root], retrain)
    result = {"retrain_first_exit": first["exit"], "retrain_traceback": first["traceback"]}
    if first["exit"] != 0:
        result["retrain_line"] = first["line"]
        return result
    catalog.write(frame, data, fmt)
    second = kflow(["run", str(config_path), *root, "--set", "trainer.warm_start=latest_blessed"], retrain)
    result.update(retrain_exit=second["exit"], retrain_line=second["line"], retrain_seconds=second["seconds"])
    result["retrain_traceback"] = first["traceback"] or second["traceback"]
    said = [line for line in second["stderr"].splitlines() if "train: warm-started from" in line]
    result["retrain_warm"] = bool(said)
    if said:
        result["retrain_mapped"] = said[0].partition("); ")[2]
    if second["exit"] == 0 and second["run_folder"] is not None:
        result["retrain_metric"] = metric(second["run_folder"], table.task)
    return result


def refused_first(result: dict) -> bool:
    """The first rows alone refused in one line (a label of one value in a table sorted by it): no retraining."""
    return result["retrain_first_exit"] == 2 and not result["retrain_traceback"]


def line_of(result: dict) -> str:
    if refused_first(result):
        return f"; its first rows refused — {result['retrain_line']}"
    if result.get("retrain_exit", result["retrain_first_exit"]) != 0:
        return f"; retrain failed — {result['retrain_line']}"
    warm = "warm-started" if result["retrain_warm"] else "NOT warm-started"
    metric = result.get("retrain_metric")
    return f"; retrained on all rows {warm}" + (f", {metric:.3f}" if metric is not None else "")


def summary(entries: list[dict]) -> list[str]:
    tried = [entry for entry in entries if "retrain_first_exit" in entry and not refused_first(entry)]
    refused = [entry for entry in entries if "retrain_first_exit" in entry and refused_first(entry)]
    if not tried and not refused:
        return []
    done = [entry for entry in tried if entry.get("retrain_exit") == 0]
    warm = [entry for entry in done if entry["retrain_warm"]]
    compared = [e for e in warm if e.get("retrain_metric") is not None and e.get("kflow") is not None]
    better = sum(e["retrain_metric"] > e["kflow"] for e in compared)
    worse = sum(e["retrain_metric"] < e["kflow"] for e in compared)
    lines = [
        f"retrain: {len(tried)} trained on their first {FIRST_SHARE:.0%} then all rows, {len(done)} exit 0, "
        f"{len(warm)} warm-started, {sum(e['retrain_traceback'] for e in tried)} tracebacks; against training all "
        f"rows from scratch: {better} better, {worse} worse, {len(compared) - better - worse} the same"
    ]
    lines += [f"  {e['name']}{line_of(e)}" for e in tried if e not in warm]
    if refused:
        lines.append(f"retrain: {len(refused)} whose first rows alone were refused in one line (not retrained)")
        lines += [f"  {e['name']}{line_of(e)}" for e in refused]
    return lines
