"""Benchmark: the Transform's analyzer pass on Quora text against `TextVectorization.adapt` in one process.

Quora-format CSVs made by bench/scale_data.py (seed 0) in --folder at 1× (130,612 rows, a tenth of the real
training set) and 10× (1,306,122 rows, its size), each ingested once by the Quora ingest (kept in --folder). Then,
alternated in each round, each in a process of its own (imports before the clock):
- adapt: `QuoraTask.prepare` without a graph, what every training process did: `TextVectorization(max_tokens=20000,
  ngrams=2).adapt` over Split-train, and the class weights;
- transform-2: the Transform's executor (components/transform) on the DirectRunner with 2 worker processes
  (`direct_num_workers=2, direct_running_mode=multi_processing`): the same vocabulary by exact counts per token
  (summed per shard of the tokens, CombinePerKey) and a bounded top-k, the class weights, the graph's files;
- transform-2t: the same with 2 worker threads (`direct_running_mode=multi_threading`): no process to start;
- transform: the same executor with no Beam options, as `kflow run` calls it: it chooses as the ingests do
  (components/ingest/ingest_options.py), worker processes only from 200,000 training records.
Prints medians, the time ratio transform-2 / adapt, the peak memory (`ru_maxrss` from wait4: the measured process;
Beam's worker processes are not in it) of each size and its ratio 10× / 1×, and whether the two vocabularies are
the same (token for token, in order).

Usage: .venv/bin/python bench/transform.py [--rounds 3] [--folder /tmp/kflow-scale] [--rows 130612 1306122]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import scale_data  # noqa: E402

SIZES = (130_612, 1_306_122)
OPTIONS = {"max_tokens": 20_000}
WORKERS_2 = ["--direct_num_workers=2", "--direct_running_mode=multi_processing"]
THREADS_2 = ["--direct_num_workers=2", "--direct_running_mode=multi_threading"]
KINDS = ("adapt", "transform-2", "transform-2t", "transform")
BEAM_ARGS = {"transform-2": WORKERS_2, "transform-2t": THREADS_2, "transform": []}


def examples_of(rows: int, folder: Path) -> Path:
    """The ingested Examples of the `rows`-row CSV, made (and ingested) when missing."""
    source, out = folder / f"quora-{rows}.csv", folder / f"quora-{rows}-ingested"
    if not source.is_file():
        print(f"generating {source} ...", flush=True)
        scale_data.quora(scale_data.QUORA_SAMPLE, rows, source)
    if not (out / "schema" / "schema.pbtxt").is_file():
        print(f"ingesting {source} ...", flush=True)
        from kflow.components.datasets.quora.ingest.executor import run
        from kflow.pipeline.dsl.artifacts import Examples, Rejects, Schema

        run(examples=Examples(out / "examples"), schema=Schema(out / "schema"), rejects=Rejects(out / "rejects"),
            source_path=str(source), beam_args=WORKERS_2)  # fmt: skip
    return out


def child(kind: str, ingested: Path, vocabulary_out: Path) -> None:
    """One measured run in this process; prints {"seconds", "imported_mb"} and writes its vocabulary."""
    import apache_beam  # noqa: F401  (imports before the clock)
    import keras  # noqa: F401

    from kflow.components.datasets.quora.task import VOCAB_FILE, QuoraTask
    from kflow.components.transform.executor import run as transform
    from kflow.components.util.schema import load_schema
    from kflow.pipeline.dsl.artifacts import Examples, Schema, TransformGraph

    imported_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    examples, schema = Examples(ingested / "examples"), Schema(ingested / "schema")
    with tempfile.TemporaryDirectory(prefix="kflow-bench-transform-") as folder:
        started = time.perf_counter()
        if kind == "adapt":
            QuoraTask(load_schema(schema.file), model_options=OPTIONS).prepare(examples, Path(folder))
            seconds = time.perf_counter() - started
            vocabulary = (Path(folder) / VOCAB_FILE).read_text().splitlines()
        else:
            graph = TransformGraph(Path(folder) / "graph")
            transform(examples=examples, schema=schema, transform_graph=graph, dataset="quora", options=OPTIONS,
                      beam_args=BEAM_ARGS[kind])  # fmt: skip
            seconds = time.perf_counter() - started
            lines = (graph.path / graph.analyzers["analyzers"]["tokens.text"]["file"]).read_text().splitlines()
            vocabulary = [line.split("\t")[0] for line in lines]
    vocabulary_out.write_text("\n".join(vocabulary) + "\n")
    print(json.dumps({"seconds": seconds, "imported_mb": imported_mb}))


def measure(kind: str, ingested: Path, vocabulary_out: Path) -> dict:
    """Runs `child` in a new process; adds its peak RSS in MB."""
    command = [sys.executable, __file__, "--child", kind, str(ingested), str(vocabulary_out)]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    output = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{kind} on {ingested} failed (exit {os.waitstatus_to_exitcode(status)})")
    return {**json.loads(output.strip().splitlines()[-1]), "peak_mb": usage.ru_maxrss / 1024}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--folder", type=Path, default=Path("/tmp/kflow-scale"))
    parser.add_argument("--rows", type=int, nargs="+", choices=SIZES, default=list(SIZES), help="the sizes to run")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], Path(args.child[1]), Path(args.child[2]))
        return 0
    args.folder.mkdir(parents=True, exist_ok=True)
    results: dict[int, dict[str, list[dict]]] = {}
    same: dict[int, bool] = {}
    for rows in args.rows:
        ingested = examples_of(rows, args.folder)
        results[rows] = {kind: [] for kind in KINDS}
        for round_number in range(args.rounds):
            for kind in KINDS if round_number % 2 == 0 else KINDS[::-1]:
                measured = measure(kind, ingested, args.folder / f"vocabulary-{kind}-{rows}.txt")
                results[rows][kind].append(measured)
                print(f"{rows} rows, round {round_number + 1}, {kind}: {measured['seconds']:.1f} s, "
                      f"peak {measured['peak_mb']:.0f} MB", flush=True)  # fmt: skip
        vocabularies = {(args.folder / f"vocabulary-{kind}-{rows}.txt").read_text() for kind in KINDS}
        same[rows] = len(vocabularies) == 1
    print("\nrows       adapt s  " + "  ".join(f"{kind} s (ratio)" for kind in KINDS[1:])
          + "  adapt MB  transform-2 MB  same vocabulary")  # fmt: skip
    for rows, kinds in results.items():
        seconds = {kind: statistics.median(m["seconds"] for m in runs) for kind, runs in kinds.items()}
        peaks = {kind: statistics.median(m["peak_mb"] for m in runs) for kind, runs in kinds.items()}
        timed = "  ".join(
            f"{seconds[kind]:>{len(kind) + 2}.1f} ({seconds[kind] / seconds['adapt']:.2f})" for kind in KINDS[1:]
        )
        print(f"{rows:<10} {seconds['adapt']:7.1f}  {timed}  {peaks['adapt']:8.0f}  {peaks['transform-2']:14.0f}  "
              f"{same[rows]}")  # fmt: skip
    small, large = SIZES
    for kind in KINDS if set(SIZES) <= set(results) else ():
        ratio = statistics.median(m["peak_mb"] for m in results[large][kind]) / statistics.median(
            m["peak_mb"] for m in results[small][kind]
        )
        print(f"peak memory 10x / 1x, {kind}: {ratio:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
