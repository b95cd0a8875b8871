"""Benchmark: each guide's training as its own script against `kflow run` of the config that expresses it.

For each guide (bench/guides/<guide>.py and bench/guides/<guide>.yaml; see bench/guides/README.md), each round
runs, one at a time:

- the guide script (its data loading, training and test evaluation; its wall time measured from here);
- `kflow run <guide>.yaml` into a fresh pipeline root: cold (ingest, train, evaluate all run);
- the same command again: cached (every component reused).

Odd rounds start with the guide script, even rounds with kflow. From each kflow run folder it reads
train/model_run/history.json (train_seconds: the Trainer's epochs, validation included; examples_per_second)
and evaluate/evaluation/metrics.json (the test metric); the script prints the same figures (its training
phase: fit or its loop, validation included where the guide validates). Per guide it prints the medians over
the rounds: wall time (guide / kflow cold / kflow cached), the training phase, examples/s, the test metric of
each, and the ratios (kflow / guide examples/s, kflow wall / guide wall), each ratio the median of the rounds'
own ratios (runs close in time: this machine is shared).

The physical limit, in the same command: this machine's float32 matmul peak (bench/peak.py --no-mlm, measured
once before the rounds) and each model's training FLOPs an example (bench/model_flops.py on the first cold kflow
run: counted from the trained model's graph on one real example, training 3× the forward pass). Both sides train
the same model, so each side's utilisation is its examples/s × those FLOPs over the peak (MFU).

Usage: .venv/bin/python bench/guides/run.py [--guides jax_mnist,mirrored_mnist,...] [--rounds 3] [--quick]
       [--epochs N] [--max-records N]   (both sides cut alike: a shorter pair)
       [--data ../shared/datasets] [--json OUT] [--keep DIR] [--no-peak]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
DEFAULT_DATA = REPO.parent / "shared" / "datasets"


@dataclass(frozen=True)
class Guide:
    name: str
    title: str
    data: str  # under --data: the script's --data and the config's data.source.path
    metric: str  # the key in kflow's metrics.json, the script's "metric"
    quick: dict[str, int] = field(default_factory=dict)  # {"epochs": n, "max_records": n} for --quick

    @property
    def script(self) -> Path:
        return HERE / f"{self.name}.py"

    @property
    def config(self) -> Path:
        return HERE / f"{self.name}.yaml"

    def pipeline(self) -> str:
        """The config's `name` (its runs go to <root>/<name>/<run id>/)."""
        match = re.search(r"^name:\s*(\S+)", self.config.read_text(), re.MULTILINE)
        if not match:
            raise ValueError(f"{self.config} has no top-level name")
        return match.group(1)


GUIDES = {
    guide.name: guide
    for guide in (
        Guide(
            "jax_mnist",
            "002 MNIST convnet, explicit jax.sharding loop (kflow: jax_data_parallel, 2 XLA host devices)",
            "mnist",
            "accuracy",
            {"epochs": 1, "max_records": 2048},
        ),
        Guide(
            "mirrored_mnist",
            "004 MNIST dense network, MirroredStrategy + fit (kflow: mirrored, 2 logical CPU devices)",
            "mnist",
            "accuracy",
            {"epochs": 1, "max_records": 2048},
        ),
        Guide(
            "keras_data_parallel",
            "003 Keras 3 DataParallel on JAX, MNIST (kflow: keras_data_parallel, 2 XLA host devices)",
            "mnist",
            "accuracy",
            {"epochs": 1, "max_records": 2048},
        ),
        Guide(
            "bert_mlm_wikitext2",
            "000 BERT-tiny masked LM on WikiText-2, MirroredStrategy (kflow: bert_mlm, mirrored, 2 logical devices)",
            "wikitext-2",
            "masked_accuracy",
            {"epochs": 1, "max_records": 1500},  # fewer lines leave less than one batch of 128 to train on
        ),
        Guide(
            "quora_classifier",
            "001 Quora questions, MirroredStrategy + fit, embedding from scratch (kflow: the same on 2 devices)",
            "quora-insincere/train_sample.csv",
            "roc_auc",
            {"epochs": 3},
        ),
    )
}


# --- Running -------------------------------------------------------------------------------------------------


def _run(command: list[str], log: Path) -> tuple[float, str]:
    """Runs `command` from the repository root, its output into `log`; (wall seconds, stdout). Fails loudly."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    started = time.perf_counter()
    result = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    log.write_text(f"$ {shlex.join(command)}\n\n--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}")
    if result.returncode:
        tail = "\n".join((result.stdout + result.stderr).splitlines()[-30:])
        raise RuntimeError(f"exit {result.returncode}: {shlex.join(command)}\n(log: {log})\n{tail}")
    return wall, result.stdout


def cuts(guide: Guide, quick: bool, **given: int | None) -> dict[str, int]:
    """What both sides of a pair are cut to: --quick's cuts for the guide, then the ones given (--epochs,
    --max-records), as {"epochs": n, "max_records": n}."""
    return {**(guide.quick if quick else {}), **{option: value for option, value in given.items() if value}}


def script_command(guide: Guide, data: Path, cut: dict[str, int]) -> list[str]:
    command = [sys.executable, str(guide.script), "--data", str(data / guide.data)]
    for option, value in cut.items():
        command += [f"--{option.replace('_', '-')}", str(value)]
    return command


def kflow_command(guide: Guide, data: Path, cut: dict[str, int], root: Path) -> list[str]:
    fields = {"epochs": "trainer.epochs", "max_records": "data.source.max_records"}
    sets = [f"data.source.path={data / guide.data}", *(f"{fields[option]}={value}" for option, value in cut.items())]
    command = [sys.executable, "-m", "kflow.pipeline.cli.main", "run", str(guide.config), "--pipeline-root", str(root)]
    for setting in sets:
        command += ["--set", setting]
    return command


def run_script(guide: Guide, data: Path, cut: dict[str, int], log: Path) -> dict:
    wall, stdout = _run(script_command(guide, data, cut), log)
    lines = [line for line in stdout.splitlines() if line.startswith('{"guide"')]
    if not lines:
        raise RuntimeError(f"{guide.script.name} printed no result line (log: {log})")
    reported = json.loads(lines[-1])
    return {
        "wall_s": wall,
        "train_s": reported["train_s"],
        "examples_per_s": reported["examples_per_s"],
        "metric": reported["metric"],
        "value": reported["value"],
        "reported": reported,
    }


def kflow_figures(run_folder: Path, metric: str) -> dict:
    """The Trainer's and the Evaluator's figures of a kflow run folder."""
    history = read_json(run_folder / "train" / "model_run" / "history.json")
    metrics = read_json(run_folder / "evaluate" / "evaluation" / "metrics.json")
    return {
        "train_s": history["train_seconds"],
        "examples_per_s": history["examples_per_second"],
        "epochs": history["epochs"],
        "examples_trained": history["examples_trained"],
        "metric": metric,
        "value": metrics[metric],
        "run_folder": str(run_folder),
    }


def run_kflow(guide: Guide, data: Path, cut: dict[str, int], root: Path, logs: Path) -> tuple[dict, dict]:
    """(cold, cached): `kflow run` into the fresh `root`, then the same command again."""
    command = kflow_command(guide, data, cut, root)
    runs = root / guide.pipeline()
    wall, _ = _run(command, logs / "kflow-cold.log")
    (cold_run,) = [path.parent for path in runs.glob("*/run.json")]
    cold = {"wall_s": wall, **kflow_figures(cold_run, guide.metric)}
    cached_wall, _ = _run(command, logs / "kflow-cached.log")
    (cached_run,) = [path.parent for path in runs.glob("*/run.json") if path.parent != cold_run]
    statuses = {name: entry["status"] for name, entry in read_json(cached_run / "run.json")["components"].items()}
    if set(statuses.values()) != {"cached"}:
        print(f"  note: the second kflow run did not reuse everything: {statuses}", flush=True)
    return cold, {"wall_s": cached_wall, "components": statuses, "run_folder": str(cached_run)}


def read_json(path: Path) -> dict:
    return json.loads(path.read_text())


# --- Summary -------------------------------------------------------------------------------------------------


def summarise(rounds: list[dict]) -> dict:
    """Medians over a guide's rounds, and the medians of each round's own ratios.

    A round: {"guide": {wall_s, train_s, examples_per_s, value}, "kflow_cold": {the same}, "kflow_cached": {wall_s}}.
    """

    def median(side: str, key: str) -> float:
        return statistics.median(r[side][key] for r in rounds)

    def outside(r: dict, side: str) -> float:
        return r[side]["wall_s"] - r[side]["train_s"]

    def ratio(top: tuple[str, str], bottom: tuple[str, str]) -> float:
        return statistics.median(r[top[0]][top[1]] / r[bottom[0]][bottom[1]] for r in rounds)

    return {
        "rounds": len(rounds),
        # Rounds whose second `kflow run` ran a component again (its code changed in between, e.g. an edit).
        "not_all_cached": sum(
            1 for r in rounds if set(r["kflow_cached"].get("components", {"-": "cached"}).values()) != {"cached"}
        ),
        "wall_s": {side: median(side, "wall_s") for side in ("guide", "kflow_cold", "kflow_cached")},
        "train_s": {side: median(side, "train_s") for side in ("guide", "kflow_cold")},
        # Wall time outside the training phase (start-up, data, evaluation): what a slow spell of the shared
        # machine during one side's training does not move.
        "outside_s": {side: statistics.median(outside(r, side) for r in rounds) for side in ("guide", "kflow_cold")},
        "examples_per_s": {side: median(side, "examples_per_s") for side in ("guide", "kflow_cold")},
        "value": {side: median(side, "value") for side in ("guide", "kflow_cold")},
        "ratios": {
            "examples_per_s kflow/guide": ratio(("kflow_cold", "examples_per_s"), ("guide", "examples_per_s")),
            "train_s kflow/guide": ratio(("kflow_cold", "train_s"), ("guide", "train_s")),
            "wall kflow cold/guide": ratio(("kflow_cold", "wall_s"), ("guide", "wall_s")),
            "outside training kflow/guide": statistics.median(
                outside(r, "kflow_cold") / outside(r, "guide") for r in rounds
            ),
            "wall kflow cached/guide": ratio(("kflow_cached", "wall_s"), ("guide", "wall_s")),
        },
    }


def utilisation(summary: dict, training_flops: dict | None, peak_flops: float | None) -> dict[str, float] | None:
    """{side: its median examples/s × its training FLOPs an example / the float32 peak}; `training_flops`: {"guide":
    at the full shapes, "kflow": over the batches kflow trains on (fewer where it cuts them to their lines)}."""
    if not training_flops or not peak_flops:
        return None
    flops = {"guide": training_flops["guide"], "kflow_cold": training_flops["kflow"]}
    return {side: speed * flops[side] / peak_flops for side, speed in summary["examples_per_s"].items()}


def measure_peak(logs: Path) -> float | None:
    """This machine's float32 matmul peak in FLOP/s (bench/peak.py --no-mlm), or None (said) when it fails."""
    out = logs / "peak.json"
    command = [sys.executable, str(REPO / "bench" / "peak.py"), "--no-mlm", "--rounds", "3", "--sizes", "1024,2048"]
    try:
        _run([*command, "--json", str(out)], logs / "peak.log")
    except RuntimeError as error:
        print(f"  note: no peak measured, no utilisation: {error}", flush=True)
        return None
    return read_json(out)["peak_float32"]["flops"]


def measure_flops(run_folder: Path, logs: Path) -> dict[str, float] | None:
    """The training FLOPs an example of the run's model (bench/model_flops.py) at the full shapes ("guide") and as
    kflow trained it ("kflow"), or None (said) when it fails."""
    try:
        _, output = _run([sys.executable, str(REPO / "bench" / "model_flops.py"), str(run_folder)], logs / "flops.log")
    except RuntimeError as error:
        print(f"  note: the model's FLOPs were not counted: {error}", flush=True)
        return None
    counted = json.loads(output.strip().splitlines()[-1])
    return {"guide": counted["training"], "kflow": counted.get("training_as_trained", counted["training"])}


def format_table(guide: Guide, summary: dict) -> str:
    """The table of one guide's medians and ratios."""
    wall, train, outside = (summary[key] for key in ("wall_s", "train_s", "outside_s"))
    speed, value = summary["examples_per_s"], summary["value"]
    rows = [
        ("", "guide script", "kflow cold", "kflow cached"),
        ("wall (s)", f"{wall['guide']:.1f}", f"{wall['kflow_cold']:.1f}", f"{wall['kflow_cached']:.1f}"),
        ("training phase (s)", f"{train['guide']:.1f}", f"{train['kflow_cold']:.1f}", ""),
        ("outside training (s)", f"{outside['guide']:.1f}", f"{outside['kflow_cold']:.1f}", ""),
        ("examples/s", f"{speed['guide']:.0f}", f"{speed['kflow_cold']:.0f}", ""),
        (f"test {guide.metric}", f"{value['guide']:.4f}", f"{value['kflow_cold']:.4f}", ""),
    ]
    used = summary.get("utilisation")
    if used:
        flops = summary["training_flops"]
        trained = "(the same)" if flops["kflow"] == flops["guide"] else f"{flops['kflow'] / 1e6:.3g}"
        rows.append(("training MFLOP/example", f"{flops['guide'] / 1e6:.3g}", trained, ""))
        rows.append(("float32 peak used (MFU)", f"{used['guide']:.2%}", f"{used['kflow_cold']:.2%}", ""))
    lines = [f"{guide.name}: {guide.title}", f"  medians of {summary['rounds']} round(s)"]
    if used:
        lines[-1] += f"; this machine's float32 matmul peak {summary['peak_flops'] / 1e9:.0f} GFLOP/s"
    lines += ["  " + f"{a:<24}{b:>14}{c:>14}{d:>14}".rstrip() for a, b, c, d in rows]
    lines.append("  ratios (median of the rounds' own):")
    lines += [f"    {name:<28}{number:6.2f}" for name, number in summary["ratios"].items()]
    if summary["not_all_cached"]:
        lines.append(
            f"  note: in {summary['not_all_cached']} round(s) the second kflow run re-ran components (their code "
            "version changed in between): its wall time is not a cached run's"
        )
    return "\n".join(lines)


def machine() -> str:
    """The CPU model, its cores, and the versions of what trains."""
    model = platform.processor() or "unknown CPU"
    try:
        cpuinfo = Path("/proc/cpuinfo").read_text().splitlines()
        model = next((line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name")), model)
    except OSError:
        pass
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    versions = []
    for package in ("tensorflow", "keras", "jax", "keras-hub"):
        try:
            versions.append(f"{package} {metadata.version(package)}")
        except metadata.PackageNotFoundError:
            pass
    return (
        f"{model}, {os.cpu_count()} cores ({usable} usable), no GPU used; "
        f"Python {platform.python_version()}, {', '.join(versions)}"
    )


# --- Main ----------------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--guides", default=",".join(GUIDES), help=f"some of {', '.join(GUIDES)} (default: all)")
    parser.add_argument("--rounds", type=int, default=3, help="alternated rounds, against this noisy shared machine")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 1 epoch (Quora 3), few records")
    parser.add_argument("--epochs", type=int, default=None, help="train both sides this many epochs (a shorter pair)")
    parser.add_argument(
        "--max-records", type=int, default=None, help="both sides read at most this many records of each split"
    )
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the datasets folder (../shared/datasets)")
    parser.add_argument("--json", type=Path, default=None, help="write the raw rounds here")
    parser.add_argument("--keep", type=Path, default=None, help="keep the run folders and logs here (default: none)")
    parser.add_argument("--no-peak", action="store_true", help="no peak and no utilisation (saves ~30 s)")
    args = parser.parse_args(argv)
    names = [name for name in args.guides.split(",") if name]
    unknown = sorted(set(names) - set(GUIDES))
    if unknown or not names:
        parser.error(f"--guides: unknown {', '.join(unknown)} (known: {', '.join(GUIDES)})")
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    for option in ("epochs", "max_records"):
        if getattr(args, option) is not None and getattr(args, option) < 1:
            parser.error(f"--{option.replace('_', '-')} must be at least 1")
    data = args.data.resolve()
    missing = [f"{name}: {data / GUIDES[name].data}" for name in names if not (data / GUIDES[name].data).exists()]
    if missing:
        print("missing data (pass --data):\n  " + "\n  ".join(missing), file=sys.stderr)
        return 2

    command_line = shlex.join([sys.executable, *sys.argv]) if argv is None else shlex.join(argv)
    started_at = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
    print(f"guides vs kflow: {', '.join(names)}; {args.rounds} round(s){' (--quick)' if args.quick else ''}")
    print(f"machine: {machine()}\ncommand: {command_line}\nstarted: {started_at}\n", flush=True)

    work = args.keep or Path(tempfile.mkdtemp(prefix="kflow-bench-guides-"))
    rounds: dict[str, list[dict]] = {name: [] for name in names}
    work.mkdir(parents=True, exist_ok=True)
    peak = None if args.no_peak else measure_peak(work)
    if peak:
        print(f"float32 matmul peak: {peak / 1e9:.1f} GFLOP/s (bench/peak.py --no-mlm)\n", flush=True)
    training_flops: dict[str, float | None] = {}
    try:
        for number in range(1, args.rounds + 1):
            for name in names:
                guide, folder = GUIDES[name], work / f"round-{number}" / name
                folder.mkdir(parents=True, exist_ok=True)
                cut = cuts(guide, args.quick, epochs=args.epochs, max_records=args.max_records)
                script_first = number % 2 == 1
                if script_first:
                    script = run_script(guide, data, cut, folder / "script.log")
                cold, cached = run_kflow(guide, data, cut, folder / "runs", folder)
                if peak and name not in training_flops:
                    training_flops[name] = measure_flops(Path(cold["run_folder"]), folder)
                if not script_first:
                    script = run_script(guide, data, cut, folder / "script.log")
                record = {
                    "round": number,
                    "order": "script first" if script_first else "kflow first",
                    "guide": script,
                    "kflow_cold": cold,
                    "kflow_cached": cached,
                }
                rounds[name].append(record)
                print(
                    f"round {number} {name:<20} guide {script['wall_s']:6.1f} s wall, {script['train_s']:6.1f} s "
                    f"training, {script['examples_per_s']:6.0f} ex/s, {guide.metric} {script['value']:.4f} | kflow "
                    f"cold {cold['wall_s']:6.1f} s, {cold['train_s']:6.1f} s, {cold['examples_per_s']:6.0f} ex/s, "
                    f"{cold['value']:.4f}; cached {cached['wall_s']:5.1f} s",
                    flush=True,
                )
    finally:
        if args.json:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            raw = {"command": command_line, "machine": machine(), "started": started_at, "quick": args.quick}
            raw["cuts"] = {"epochs": args.epochs, "max_records": args.max_records}
            raw["peak_float32_flops"], raw["training_flops"] = peak, training_flops
            args.json.write_text(json.dumps({**raw, "rounds": rounds}, indent=2) + "\n")
        if args.keep is None:
            import shutil

            shutil.rmtree(work, ignore_errors=True)

    print()
    for name in names:
        summary = summarise(rounds[name])
        flops = training_flops.get(name)
        summary.update(utilisation=utilisation(summary, flops, peak), training_flops=flops, peak_flops=peak)
        print(format_table(GUIDES[name], summary) + "\n")
    print(f"machine: {machine()}\ncommand: {command_line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
