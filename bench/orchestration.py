"""Benchmark: the orchestration overhead of kflow's local runner against KFP's own local runner.

The same pipeline of three trivial components (each sleeps 0 s and writes a small artifact,
the next one reads it), chained a → b → c:

- kflow: `kflow.pipeline.api.run` (the Beam DAG runner: run folder, run.json, staging and
  atomic publish, fingerprints and the cache lookup), with the cache off, so all three run;
- kflow cached: the same pipeline again with the cache on, after one run filled it (kfp.local
  has no cache: KFP's caching lives in its backend);
- kfp.local: the pipeline written as KFP lightweight Python components in a `@dsl.pipeline`,
  run by `kfp.local` with `SubprocessRunner(use_venv=False)` (each task a Python subprocess
  of this environment, as KFP's local mode runs them).

Rounds alternate the three; the figures are medians. Per-component overhead = the pipeline's
wall time / 3 (the components do no work). Prints each median and the ratios to kfp.local;
goal: kflow ≤ kfp.local.

Usage: .venv/bin/python bench/orchestration.py [--rounds 5]
"""

# No `from __future__ import annotations`: KFP reads the components' annotations as objects.
import argparse
import contextlib
import io
import logging
import statistics
import tempfile
import time
from pathlib import Path

from kfp import dsl, local

from kflow.pipeline import api
from kflow.pipeline.dsl.artifacts import Artifact

STEPS = 3


@api.component
def first_step(out: api.Output[Artifact]) -> dict:
    time.sleep(0)
    (out.path / "value.txt").write_text("1")
    return {"value": 1}


@api.component
def next_step(previous: api.Input[Artifact], out: api.Output[Artifact]) -> dict:
    time.sleep(0)
    value = int((previous.path / "value.txt").read_text()) + 1
    (out.path / "value.txt").write_text(str(value))
    return {"value": value}


def kflow_pipeline() -> api.Pipeline:
    a = first_step("a")
    b = next_step("b", previous=a.outputs["out"])
    c = next_step("c", previous=b.outputs["out"])
    return api.Pipeline("orchestration-bench", [a, b, c])


@dsl.component(base_image="python:3.11")
def kfp_first(out: dsl.Output[dsl.Artifact]):
    import time

    time.sleep(0)
    with open(out.path, "w") as file:
        file.write("1")


@dsl.component(base_image="python:3.11")
def kfp_next(previous: dsl.Input[dsl.Artifact], out: dsl.Output[dsl.Artifact]):
    import time

    time.sleep(0)
    with open(previous.path) as file:
        value = int(file.read()) + 1
    with open(out.path, "w") as file:
        file.write(str(value))


@dsl.pipeline(name="orchestration-bench")
def kfp_pipeline():
    a = kfp_first()
    b = kfp_next(previous=a.outputs["out"])
    kfp_next(previous=b.outputs["out"])


def time_kflow(root: Path, cached: bool) -> float:
    started = time.perf_counter()
    result = api.run(kflow_pipeline(), root, enable_cache=cached)
    seconds = time.perf_counter() - started
    statuses = {execution.status for execution in result.run.executions.values()}
    assert statuses == ({"cached"} if cached else {"succeeded"}), statuses
    return seconds


def time_kfp_local(root: Path) -> float:
    local.init(runner=local.SubprocessRunner(use_venv=False), pipeline_root=str(root))
    started = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):  # kfp.local prints each task's banner and logs
        kfp_pipeline()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    logging.disable(logging.INFO)  # Both runners log every task; the figures are the output.
    times: dict[str, list[float]] = {"kflow": [], "kflow cached": [], "kfp.local": []}
    with tempfile.TemporaryDirectory(prefix="kflow-bench-") as scratch:
        root = Path(scratch)
        time_kflow(root / "kflow", cached=False)  # Warm-up: imports, and the cache the cached rounds reuse.
        time_kfp_local(root / "kfp")
        for number in range(args.rounds):
            order = ["kflow", "kflow cached", "kfp.local"]
            for name in order if number % 2 == 0 else reversed(order):
                if name == "kfp.local":
                    times[name].append(time_kfp_local(root / "kfp"))
                else:
                    times[name].append(time_kflow(root / "kflow", cached=name == "kflow cached"))
    medians = {name: statistics.median(values) for name, values in times.items()}
    print(f"{STEPS} trivial components chained, {args.rounds} rounds alternated, medians:")
    print(f"{'runner':<14}{'pipeline s':>12}{'per component s':>18}{'ratio to kfp.local':>20}")
    for name, seconds in medians.items():
        ratio = seconds / medians["kfp.local"]
        print(f"{name:<14}{seconds:>12.3f}{seconds / STEPS:>18.3f}{ratio:>20.3f}")


if __name__ == "__main__":
    main()
