"""Benchmark: the csv ingest against a plain `csv`-module script, at two file sizes, with peak memory.

Generates (deterministically, seed 0, outside the repo) CSV files of --rows and --rows/4 records
with mixed column types: 4 floats (one with 2 % missing values), 2 ints, 2 categorical strings,
a bool, a short free-text string and a 3-class label. Then, for each size, alternating rounds:

- kflow: the csv ingest executor (`components/datasets/csv/ingest/executor.py`) with the
  config's default Beam options (DirectRunner, one worker, in memory) and 2 shards a split:
  type inference on 10,000 rows, rejects, stratified hash split, gzipped TFRecord shards, stats;
- kflow 2 workers: the same with `direct_num_workers=2, direct_running_mode=multi_processing`;
- plain: one Python loop: `csv.reader`, the same type parsing and missing-value handling,
  tf.train.Example, a split by a hash of the row, gzipped TFRecord files, no Beam.

Each run is a process of its own (imports done before the clock starts), so its peak RSS
(`ru_maxrss` from wait4) is its own; "over imports" is that peak less the RSS after the imports
(TensorFlow and Beam alone hold ~800 MB). Prints medians of --rounds, ratios to the plain script,
and the peak memory ratio between the two file sizes.

Usage: .venv/bin/python bench/csv_ingest.py [--rows 1000000] [--rounds 3] [--folder /tmp/kflow-bench-csv]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
COLUMNS = ["f1", "f2", "f3", "f4", "n1", "n2", "colour", "city", "flag", "note", "label"]
WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma".split()
CITIES = [f"city{i:03d}" for i in range(120)]
COLOURS = ["red", "green", "blue", "amber", "violet"]
TYPES = {"f1": "float", "f2": "float", "f3": "float", "f4": "float", "n1": "int", "n2": "int"}
TYPES |= {"colour": "string", "city": "string", "flag": "bool", "note": "string", "label": "string"}
MISSING = {"", "NA", "NaN", "null"}
WORKERS_2 = ["--direct_num_workers=2", "--direct_running_mode=multi_processing"]


def generate(path: Path, rows: int, seed: int = 0) -> None:
    """A CSV of `rows` records whose label depends on the features (so it is learnable, not noise)."""
    rng = random.Random(seed)
    with path.open("w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(COLUMNS)
        for _ in range(rows):
            f1, f2, f3, f4 = (round(rng.gauss(0, 1), 4) for _ in range(4))
            colour = rng.choice(COLOURS)
            score = f1 + 0.5 * f2 + (0.8 if colour == "red" else 0)
            label = "high" if score > 0.7 else "low" if score < -0.7 else "mid"
            note = " ".join(rng.choices(WORDS, k=rng.randint(1, 5)))
            writer.writerow(
                [f1, f2, "NA" if rng.random() < 0.02 else f3, f4, rng.randint(0, 99), rng.randint(-5, 5000)]
                + [colour, rng.choice(CITIES), rng.choice(["true", "false"]), note, label]
            )


def plain(source: Path, out: Path) -> int:
    """The plain single-process script: parse, type, serialise, split by hash, write gzipped TFRecords."""
    import hashlib

    import tensorflow as tf

    out.mkdir(parents=True, exist_ok=True)
    writers = {
        split: tf.io.TFRecordWriter(str(out / f"{split}.gz"), options="GZIP") for split in ("train", "eval", "test")
    }
    written = 0
    with source.open(newline="", encoding="utf-8") as file:
        reader = csv.reader(file)
        header = next(reader)
        for row in reader:
            if len(row) != len(header):
                continue
            example = tf.train.Example()
            features = example.features.feature
            for name, text in zip(header, row, strict=True):
                if text.strip() in MISSING:
                    continue
                kind = TYPES[name]
                if kind == "float":
                    features[name].float_list.value.append(float(text))
                elif kind == "int":
                    features[name].int64_list.value.append(int(text))
                elif kind == "bool":
                    features[name].int64_list.value.append(int(text.strip().lower() == "true"))
                else:
                    features[name].bytes_list.value.append(text.encode())
            bucket = int.from_bytes(hashlib.sha1(",".join(row).encode()).digest()[:8], "big") % 10
            split = "train" if bucket < 8 else "eval" if bucket == 8 else "test"
            writers[split].write(example.SerializeToString())
            written += 1
    for writer in writers.values():
        writer.close()
    return written


def run_kflow(source: Path, out: Path, beam_args: list[str]) -> int:
    from kflow.components.datasets.csv.ingest.executor import run
    from kflow.pipeline.dsl.artifacts import Examples, Rejects, Schema

    summary = run(
        examples=Examples(out / "examples"),
        schema=Schema(out / "schema"),
        rejects=Rejects(out / "rejects"),
        source_path=str(source),
        label="label",
        beam_args=beam_args,
    )
    return sum(summary[split] for split in ("train", "eval", "test"))


def child(kind: str, source: Path) -> None:
    """One measured run in this process; prints {"seconds", "records"} as JSON."""
    import apache_beam  # noqa: F401  (imports before the clock)
    import tensorflow  # noqa: F401

    import kflow.components.datasets.csv.ingest.executor  # noqa: F401

    imported_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    with tempfile.TemporaryDirectory(prefix="kflow-bench-csv-out-") as folder:
        started = time.perf_counter()
        if kind == "plain":
            records = plain(source, Path(folder))
        else:
            records = run_kflow(source, Path(folder), WORKERS_2 if kind == "kflow-2" else [])
        seconds = time.perf_counter() - started
    print(json.dumps({"seconds": seconds, "records": records, "imported_mb": imported_mb}))


def measure(kind: str, source: Path) -> dict:
    """Runs `child` in a new process; adds its peak RSS in MB (the children of a multi-processing run excluded)."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    command = [sys.executable, __file__, "--child", kind, str(source)]
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    output = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{kind} on {source} failed (exit {os.waitstatus_to_exitcode(status)})")
    result = json.loads(output.strip().splitlines()[-1])
    return {**result, "peak_mb": usage.ru_maxrss / 1024}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--folder", type=Path, default=Path(tempfile.gettempdir()) / "kflow-bench-csv")
    parser.add_argument("--kinds", default="plain,kflow,kflow-2")
    parser.add_argument("--child", nargs=2, metavar=("KIND", "CSV"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], Path(args.child[1]))
        return 0
    args.folder.mkdir(parents=True, exist_ok=True)
    sizes = sorted({args.rows // 4, args.rows})
    sources = {}
    for rows in sizes:
        sources[rows] = args.folder / f"tabular-{rows}.csv"
        if not sources[rows].is_file():
            print(f"generating {sources[rows]} ...", flush=True)
            partial = sources[rows].with_suffix(".partial")
            generate(partial, rows)
            shutil.move(partial, sources[rows])
    kinds = args.kinds.split(",")
    results: dict[tuple[int, str], list[dict]] = {}
    for round_number in range(args.rounds):
        for rows in sizes:
            order = kinds if round_number % 2 == 0 else kinds[::-1]
            for kind in order:
                result = measure(kind, sources[rows])
                results.setdefault((rows, kind), []).append(result)
                print(
                    f"  round {round_number + 1} {rows:>9,} rows {kind:<8} {result['seconds']:7.1f} s "
                    f"{result['peak_mb']:6.0f} MB (imports {result['imported_mb']:4.0f} MB)",
                    flush=True,
                )
    print(
        f"\n{'rows':>10} {'run':<9} {'records':>9} {'median s':>9} {'records/s':>10} {'vs plain':>9} "
        f"{'peak MB':>8} {'over imports':>13}"
    )
    for rows in sizes:
        plain_s = statistics.median(r["seconds"] for r in results.get((rows, "plain"), [{"seconds": float("nan")}]))
        for kind in kinds:
            runs = results[(rows, kind)]
            seconds = statistics.median(r["seconds"] for r in runs)
            peak = statistics.median(r["peak_mb"] for r in runs)
            growth = statistics.median(r["peak_mb"] - r["imported_mb"] for r in runs)
            print(
                f"{rows:>10,} {kind:<9} {runs[0]['records']:>9,} {seconds:>9.1f} {rows / seconds:>10,.0f} "
                f"{seconds / plain_s:>9.2f} {peak:>8.0f} {growth:>13.0f}"
            )
    if len(sizes) == 2:
        small, large = sizes
        for kind in kinds:
            ratio = statistics.median(r["peak_mb"] for r in results[(large, kind)]) / statistics.median(
                r["peak_mb"] for r in results[(small, kind)]
            )
            print(f"peak memory {kind}: {large:,} rows / {small:,} rows = {ratio:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
