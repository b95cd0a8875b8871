"""Benchmark: the csv dataset's ingest of a table as JSON Lines against the same table as CSV.

The table is bench/scale_data.py's generated tabular CSV (--rows records: 4 floats, one with 2 % missing values,
2 ints, 2 categories, a boolean, a short free text, a 3-class label), and its JSON Lines copy as pandas writes it
(`to_json(orient="records", lines=True)`: the missing values null, the booleans true/false), both made outside the
repository. Each round runs the ingest executor (default Beam options: DirectRunner in memory, one worker) on each
file in this process, the order alternating between rounds; it prints the medians and their ratio, JSON Lines over
CSV, and checks that both wrote the same number of records to each split.

Usage: .venv/bin/python bench/json_lines.py [--rows 200000] [--rounds 3] [--folder DIR]
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
    paths = {"csv": folder / f"tabular-{rows}.csv", "jsonl": folder / f"tabular-{rows}.jsonl"}
    if not paths["csv"].is_file():
        scale_data.tabular(rows, paths["csv"])
    if not paths["jsonl"].is_file():
        pd.read_csv(paths["csv"]).to_json(paths["jsonl"], orient="records", lines=True)
    return paths


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
    parser.add_argument("--folder", type=Path, default=Path(tempfile.gettempdir()) / "kflow-bench-json-lines")
    args = parser.parse_args()
    args.folder.mkdir(parents=True, exist_ok=True)
    paths = make(args.rows, args.folder)
    seconds: dict[str, list[float]] = {"csv": [], "jsonl": []}
    splits: dict[str, dict] = {}
    for index in range(args.rounds):
        for kind in ("csv", "jsonl") if index % 2 == 0 else ("jsonl", "csv"):
            took, summary = ingest(paths[kind])
            seconds[kind].append(took)
            splits[kind] = {name: summary[name] for name in ("train", "eval", "test", "rejected")}
            print(f"round {index + 1} {kind}: {took:.1f} s {splits[kind]}", flush=True)
    if splits["csv"] != splits["jsonl"]:
        print(f"the two ingests differ: {splits}")
        return 1
    csv_s, jsonl_s = statistics.median(seconds["csv"]), statistics.median(seconds["jsonl"])
    print(
        f"{args.rows:,} records: CSV {csv_s:.1f} s ({args.rows / csv_s:,.0f} records/s), JSON Lines {jsonl_s:.1f} s "
        f"({args.rows / jsonl_s:,.0f} records/s): {jsonl_s / csv_s:.2f}x the CSV's time (medians of {args.rounds})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
