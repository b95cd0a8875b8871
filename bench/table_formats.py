"""Benchmark: the csv dataset's ingest of a table as JSON Lines, a JSON array and an Excel workbook against the same
table as CSV.

The table is bench/scale_data.py's generated tabular CSV (--rows records: 4 floats, one with 2 % missing values,
2 ints, 2 categories, a boolean, a short free text, a 3-class label), and its JSON Lines copy as pandas writes it
(`to_json(orient="records", lines=True)`: the missing values null, the booleans true/false) and its JSON array copy
(`to_json(orient="records")`, one line) and its workbook (`to_excel`, openpyxl's writer), all made outside the
repository. Each round runs the ingest executor
(default Beam options: DirectRunner in memory, one worker) on each file in this process, the order turning between
rounds; it prints the medians and their ratios to the CSV's, and checks that all wrote the same number of records to
each split.

Usage: .venv/bin/python bench/table_formats.py [--rows 200000] [--rounds 3] [--folder DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import pandas as pd  # noqa: E402
import scale_data  # noqa: E402

from kflow.components.datasets.csv.ingest.executor import run  # noqa: E402
from kflow.pipeline.dsl.artifacts import Examples, Rejects, Schema  # noqa: E402


def make(rows: int, folder: Path) -> dict[str, Path]:
    paths = {kind: folder / f"tabular-{rows}.{kind}" for kind in KINDS}
    if not paths["csv"].is_file():
        scale_data.tabular(rows, paths["csv"])
    if not paths["jsonl"].is_file():
        pd.read_csv(paths["csv"]).to_json(paths["jsonl"], orient="records", lines=True)
    if not paths["json"].is_file():
        pd.read_csv(paths["csv"]).to_json(paths["json"], orient="records")
    if not paths["xlsx"].is_file():
        pd.read_csv(paths["csv"]).to_excel(paths["xlsx"], index=False)
    return paths


KINDS = ("csv", "jsonl", "json", "xlsx")
NAMES = {"csv": "CSV", "jsonl": "JSON Lines", "json": "JSON array", "xlsx": "Excel workbook"}


def ingest(path: Path) -> tuple[float, dict]:
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch)
        started = time.perf_counter()
        summary = run(
            source_path=str(path),
            label="label",
            examples=Examples(out / "examples"),
            schema=Schema(out / "schema"),
            rejects=Rejects(out / "rejects"),
        )
        return time.perf_counter() - started, summary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--folder", type=Path, default=Path(tempfile.gettempdir()) / "kflow-bench-table-formats")
    args = parser.parse_args()
    args.folder.mkdir(parents=True, exist_ok=True)
    paths = make(args.rows, args.folder)
    seconds: dict[str, list[float]] = {kind: [] for kind in KINDS}
    splits: dict[str, dict] = {}
    for index in range(args.rounds):
        for kind in KINDS[index % len(KINDS) :] + KINDS[: index % len(KINDS)]:
            took, summary = ingest(paths[kind])
            seconds[kind].append(took)
            splits[kind] = {name: summary[name] for name in ("train", "eval", "test", "rejected")}
            print(f"round {index + 1} {kind}: {took:.1f} s {splits[kind]}", flush=True)
    if len({str(split) for split in splits.values()}) != 1:
        print(f"the ingests differ: {splits}")
        return 1
    medians = {kind: statistics.median(seconds[kind]) for kind in KINDS}
    print(f"{args.rows:,} records, medians of {args.rounds}:")
    for kind, took in medians.items():
        ratio = f": {took / medians['csv']:.2f}x the CSV's time" if kind != "csv" else ""
        print(f"  {NAMES[kind]} {took:.1f} s ({args.rows / took:,.0f} records/s){ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
