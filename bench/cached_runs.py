"""Benchmark: a fully cached `kflow run` of every shipped config (pipeline/configs/*.yaml), in seconds.

Issue 31's goal: ≤ 1.5 s each. For each config, a first run makes the cache (shortened with --set overrides, which
the re-runs repeat: what a cached run costs does not depend on how long the training was), then --rounds re-runs,
each a new `kflow -q run` process, are timed from the command's start to its exit (Python's start-up and imports
included). The real datasets come from ../shared/datasets; a config whose data is absent is skipped, saying so.

Usage: .venv/bin/python bench/cached_runs.py [--rounds 5] [--configs demo,iris,...] [--keep DIR]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATASETS = REPO.parent / "shared" / "datasets"
GOAL_SECONDS = 1.5
QUICK = ["--set", "trainer.epochs=1", "--set", "evaluator.on_not_blessed=warn"]
OVERRIDES: dict[str, tuple[str | None, list[str]]] = {
    "demo": (None, []),
    "iris": (None, []),
    "mnist": ("mnist", ["--set", "data.source.max_records=2000"]),
    "mnist_compare": ("mnist", ["--set", "data.source.max_records=2000"]),
    "quora": ("quora-insincere", ["--set", "data.source.max_records=2000"]),
    "wikitext2": ("wikitext-2", ["--set", "data.source.max_records=300", "--set", "trainer.steps_per_epoch=2"]),
}


def kflow(config: Path, root: Path, settings: list[str]) -> tuple[float, subprocess.CompletedProcess]:
    command = [sys.executable, "-m", "kflow.pipeline.cli.main", "-q", "run", str(config), "--pipeline-root", str(root)]
    started = time.perf_counter()
    done = subprocess.run([*command, *settings], cwd=REPO, capture_output=True, text=True, timeout=3600)
    return time.perf_counter() - started, done


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--configs", default=",".join(OVERRIDES))
    parser.add_argument("--keep", help="a pipeline root to keep (and reuse) instead of a temporary one")
    args = parser.parse_args()
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="kflow-cached-"))
    rows = []
    try:
        for name in args.configs.split(","):
            dataset, extra = OVERRIDES[name]
            settings = [*QUICK, *extra]
            if dataset is not None:
                if not (DATASETS / dataset).is_dir():
                    print(f"{name}: skipped: {DATASETS / dataset} is absent (see ../shared/datasets/README.md)")
                    continue
                settings += ["--set", f"data.source.path={DATASETS / dataset}"]
            config = REPO / "pipeline" / "configs" / f"{name}.yaml"
            first, done = kflow(config, root, settings)
            if done.returncode != 0:
                print(f"{name}: the first run failed (exit {done.returncode}): {done.stderr.strip()[-400:]}")
                continue
            times = []
            for _ in range(args.rounds):
                seconds, again = kflow(config, root, settings)
                if again.returncode != 0 or "cached" not in again.stdout:
                    print(f"{name}: a re-run was not fully cached: {again.stdout[-400:]}{again.stderr[-400:]}")
                    break
                times.append(seconds)
            if times:
                rows.append((name, first, statistics.median(times), min(times), max(times)))
                print(f"{name}: first run {first:.1f} s; cached {statistics.median(times):.2f} s", flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    print(f"\nfully cached kflow run, {args.rounds} re-runs each (goal ≤ {GOAL_SECONDS} s)")
    print(f"{'config':<15}{'first run s':>12}{'cached median s':>17}{'min':>7}{'max':>7}  goal")
    for name, first, median, low, high in rows:
        verdict = "met" if median <= GOAL_SECONDS else "missed"
        print(f"{name:<15}{first:>12.1f}{median:>17.2f}{low:>7.2f}{high:>7.2f}  {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
