"""Benchmark: small data from a cold process, `kflow run pipeline/configs/iris.yaml` against a plain Keras script.

Issue 58's goal: kflow's cold run (a new process and an empty pipeline root: ingest, statistics, schema, validate,
transform, train, evaluate, to BLESSED) at most 0.5× the wall time of the plain script below, which does the same fit
(reads the CSV, normalises, a two-layer MLP of 64 and 32 units, 40 epochs of batch 16 with Adam at 0.01, evaluates on
a held-out tenth). Both are timed from the command's start to its exit, Python's start-up and imports included, in
alternated rounds (plain, kflow, plain, ...); the ratio is of the medians, with each round's ratio beside it. The
test accuracy of each side is printed too: kflow's from its evaluation, the script's from its own hold-out. Each
round also times a new process that only imports Keras (on TensorFlow) and Beam, as every kflow run does: the
floor under any such run, against the same plain script.

Usage: .venv/bin/python bench/small_data.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO / "pipeline" / "configs" / "iris.yaml"
DATA = REPO / "pipeline" / "configs" / "data" / "iris.csv"
GOAL = 0.5

# The plain script a user would write for the same fit (12 lines of work).
PLAIN = """
import sys
import keras, numpy as np, pandas as pd
frame = pd.read_csv(sys.argv[1])
y = frame.pop("species").astype("category").cat.codes.to_numpy()
x = frame.to_numpy("float32")
order = np.random.default_rng(0).permutation(len(x))
x, y, cut = x[order], y[order], int(len(x) * 0.9)
mean, std = x[:cut].mean(axis=0), x[:cut].std(axis=0)
x = (x - mean) / std
classes = int(y.max()) + 1
model = keras.Sequential([keras.Input((x.shape[1],)), keras.layers.Dense(64, activation="relu"),
                          keras.layers.Dense(32, activation="relu"), keras.layers.Dense(classes, activation="softmax")])
model.compile(optimizer=keras.optimizers.Adam(0.01), loss="sparse_categorical_crossentropy", metrics=["accuracy"])
model.fit(x[:cut], y[:cut], epochs=40, batch_size=16, verbose=0)
print(model.evaluate(x[cut:], y[cut:], verbose=0, return_dict=True)["accuracy"])
"""
FLOOR = "import keras, apache_beam"


def plain() -> tuple[float, float]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", PLAIN, str(DATA)], capture_output=True, text=True, timeout=600)
    seconds = time.perf_counter() - started
    if done.returncode:
        raise SystemExit(f"the plain script failed: {done.stderr[-2000:]}")
    return seconds, float(done.stdout.split()[-1])


def floor() -> float:
    """The seconds of a process that only imports what any kflow run imports (Keras on TensorFlow, Beam): no run
    that trains with them can be faster."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", FLOOR], capture_output=True, text=True, timeout=600)
    if done.returncode:
        raise SystemExit(f"the import floor failed: {done.stderr[-2000:]}")
    return time.perf_counter() - started


def kflow(root: Path) -> tuple[float, float]:
    command = [sys.executable, "-m", "kflow.pipeline.cli.main", "-q", "run", str(CONFIG), "--pipeline-root", str(root)]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=600)
    seconds = time.perf_counter() - started
    if done.returncode:
        raise SystemExit(f"kflow run failed ({done.returncode}): {done.stderr[-2000:]}")
    (metrics,) = root.glob("iris/*/evaluate/evaluation/metrics.json")
    return seconds, float(json.loads(metrics.read_text())["accuracy"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="kflow-small-"))
    rows = []
    try:
        for index in range(args.rounds):
            plain_seconds, plain_accuracy = plain()
            kflow_seconds, kflow_accuracy = kflow(scratch / f"round-{index}")  # an empty root: nothing cached
            floor_seconds = floor()
            rows.append((plain_seconds, kflow_seconds, plain_accuracy, kflow_accuracy, floor_seconds))
            print(
                f"round {index + 1}: plain {plain_seconds:.1f} s (accuracy {plain_accuracy:.3f}), kflow "
                f"{kflow_seconds:.1f} s (accuracy {kflow_accuracy:.3f}): {kflow_seconds / plain_seconds:.2f}x; "
                f"importing Keras and Beam alone {floor_seconds:.1f} s",
                flush=True,
            )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    plain_median = statistics.median(row[0] for row in rows)
    kflow_median = statistics.median(row[1] for row in rows)
    ratio = kflow_median / plain_median
    ratios = statistics.median(row[1] / row[0] for row in rows)
    verdict = "met" if ratio <= GOAL else "not met"
    floor_median = statistics.median(row[4] for row in rows)
    print(
        f"the import floor ({FLOOR!r} in a new process): {floor_median:.1f} s, {floor_median / plain_median:.2f}x "
        "the plain script"
    )
    print(
        f"iris cold run: kflow {kflow_median:.1f} s, plain script {plain_median:.1f} s (medians of {len(rows)}): "
        f"{ratio:.2f}x (median of the rounds' ratios {ratios:.2f}x); goal <= {GOAL}x: {verdict}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
