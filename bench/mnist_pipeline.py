"""Benchmark: the MNIST pipeline's orchestration overhead and the Trainer's throughput.

Runs `kflow run pipeline/configs/mnist.yaml` (no cache) on real MNIST as a
subprocess, then, in this process, a plain Keras `model.fit` on the same images as
in-memory arrays with the same model and batch size. Prints:

- orchestration overhead = (wall time of the `kflow run` command - sum of the
  component times in run.json) / wall time;  goal ≤ 10 %
- Trainer ratio = Trainer examples/s (measured around its fit) / plain fit examples/s;  goal ≥ 0.9

Each round runs both, one after the other; the figures are the medians over --rounds.

Usage: .venv/bin/python bench/mnist_pipeline.py [--data ../shared/datasets/mnist] [--epochs 3] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from baselines import plain_fit_on  # bench/, the script's folder

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO.parent / "shared" / "datasets" / "mnist"


def run_pipeline(data: Path, epochs: int, batch_size: int, root: Path) -> tuple[float, dict]:
    command = [
        sys.executable,
        "-m",
        "kflow.pipeline.cli.main",
        "run",
        str(REPO / "pipeline" / "configs" / "mnist.yaml"),
        "--pipeline-root",
        str(root),
        "--no-cache",
        "--set",
        f"data.source.path={data}",
        "--set",
        f"trainer.epochs={epochs}",
        "--set",
        f"trainer.batch_size={batch_size}",
        "--set",
        "evaluator.thresholds={}",
    ]
    started = time.perf_counter()
    subprocess.run(command, check=True, cwd=REPO)
    wall = time.perf_counter() - started
    record = json.loads(next((root / "mnist").glob("*/run.json")).read_text())
    return wall, record


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=3, help="alternate runs, against this noisy shared machine")
    args = parser.parse_args()
    if not (args.data / "mnist.npz").exists():
        print(f"no mnist.npz under {args.data}: pass --data", file=sys.stderr)
        return 2

    print(
        "MNIST pipeline benchmark",
        f"({args.epochs} epochs, batch {args.batch_size}; {args.rounds} rounds of kflow run then plain fit)",
    )
    overheads, ratios = [], []
    for round_number in range(1, args.rounds + 1):
        with tempfile.TemporaryDirectory() as root:
            wall, record = run_pipeline(args.data.resolve(), args.epochs, args.batch_size, Path(root))
        components = record["components"]
        overhead = wall - sum(entry["seconds"] for entry in components.values())
        trainer = components["train"]["summary"]["examples_per_second"]
        train_records = components["ingest"]["summary"]["train"]
        plain = plain_fit_on("tensorflow", args.data, train_records, args.epochs, args.batch_size)
        overheads.append(overhead / wall)
        ratios.append(trainer / plain)
        times = ", ".join(f"{node} {entry['seconds']:.1f} s" for node, entry in components.items())
        print(f"\nround {round_number}: {times}; kflow run wall {wall:.1f} s")
        print(f"  orchestration overhead   {overhead:8.1f} s = {overhead / wall:6.1%} of the run")
        print(f"  Trainer {trainer:6.0f} ex/s, plain model.fit {plain:6.0f} ex/s: ratio {trainer / plain:.2f}")
    print(f"\norchestration overhead, median of {args.rounds}: {statistics.median(overheads):6.1%}   (goal ≤ 10 %)")
    print(f"Trainer / plain, median of {args.rounds}:        {statistics.median(ratios):6.2f}   (goal ≥ 0.9)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
