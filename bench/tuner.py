"""The Tuner against Optuna's own plain script: trials an hour and the best objective each reaches in the same
wall time, on the same search space and the same data.

Data: MNIST's first `--records` images through kflow's MNIST ingest (Split-train 9 : Split-eval 1), read once.
Search: learning rate log-uniform [1e-4, 1e-2] and batch size {32, 64, 128} for the MNIST convnet, `--epochs`
epochs, TPE with Hyperband pruning, objective val_loss (minimize).
- kflow: the Tuner's executor (components/tuner), trials as processes, `--parallel` at a time, each training
  through the Trainer's executor; max_time `--seconds`.
- plain: Optuna's own pattern, one process: `study.optimize(objective, timeout=--seconds)` whose objective fits
  the same convnet on the same arrays in memory with a callback reporting val_loss each epoch (Optuna's Keras
  examples), n_jobs=1, the same sampler and pruner.
Both stop starting trials at `--seconds` and let the running ones finish; trials an hour = trials ended / the wall
time. Rounds alternate the two sides (which goes first alternates too); prints each round and the medians' ratios.

    .venv/bin/python bench/tuner.py [--rounds 3] [--seconds 150] [--records 6000] [--epochs 3] [--parallel 2]
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

REPO = Path(__file__).resolve().parents[1]
MNIST = REPO.parent / "shared" / "datasets" / "mnist"
SPACE = {
    "trainer.optimizer.learning_rate": {"log_uniform": [1e-4, 1e-2]},
    "trainer.batch_size": {"choice": [32, 64, 128]},
}


def ingest(folder: Path, records: int) -> tuple[Path, Path]:
    from kflow.components.datasets.mnist.ingest.executor import run
    from kflow.pipeline.dsl.artifacts import Examples, Rejects, Schema

    examples, schema = Examples(folder / "examples"), Schema(folder / "schema")
    run(examples=examples, schema=schema, rejects=Rejects(folder / "rejects"), source_path=str(MNIST),
        max_records=records, split={"train": 9, "eval": 1})  # fmt: skip
    return examples.path, schema.path


def kflow_side(examples: Path, schema: Path, seconds: float, epochs: int, parallel: int, out: Path) -> dict:
    """The Tuner's executor in a process of its own (as a pipeline's node runs it)."""
    code = f"""
import json, time
from kflow.components.trainer.config import component_parameters
from kflow.components.tuner.executor import run
from kflow.pipeline.dsl.artifacts import Examples, HyperParameters, Schema
defaults = {{n: p.default for n, p in component_parameters().items() if not p.required and p.default is not None}}
trainer = {{**defaults, "dataset": "mnist", "model_name": "mnist_convnet", "epochs": {epochs}}}
started = time.perf_counter()
summary = run(examples=Examples({str(examples)!r}), schema=Schema({str(schema)!r}),
    hyperparameters=HyperParameters({str(out)!r}), search_space={SPACE!r}, algorithm="hyperband", max_trials=10000,
    max_time={seconds}, objective_metric="val_loss", objective_direction=None, parallel_trials={parallel}, seed=0,
    trainer=trainer, trainer_executor="kflow.components.trainer.executor:run")
wall = time.perf_counter() - started
print(json.dumps({{"wall": wall, "trials": sum(summary[k] for k in summary if k.startswith("trials_")),
    "pruned": summary["trials_pruned"], "best": summary["best_value"]}}))
"""
    return _last_json(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO))


def plain_side(examples: Path, seconds: float, epochs: int) -> dict:
    """Optuna's plain pattern in a process of its own."""
    code = f"""
import json, time
import numpy as np, optuna, keras, tensorflow as tf
from kflow.components.models.mnist_convnet import build_mnist_convnet
optuna.logging.set_verbosity(optuna.logging.WARNING)
def split(name):
    files = sorted(str(p) for p in (__import__("pathlib").Path({str(examples)!r}) / f"Split-{{name}}").glob("*.gz"))
    features = {{"image": tf.io.FixedLenFeature([], tf.string), "label": tf.io.FixedLenFeature([], tf.int64)}}
    xs, ys = [], []
    for record in tf.data.TFRecordDataset(files, compression_type="GZIP"):
        parsed = tf.io.parse_single_example(record, features)
        xs.append(np.frombuffer(parsed["image"].numpy(), np.uint8).reshape(28, 28)); ys.append(int(parsed["label"]))
    return np.stack(xs), np.array(ys)
(x, y), (vx, vy) = split("train"), split("eval")
class Report(keras.callbacks.Callback):
    def __init__(self, trial): super().__init__(); self.trial = trial
    def on_epoch_end(self, epoch, logs=None):
        self.trial.report(logs["val_loss"], epoch + 1)
        if self.trial.should_prune(): raise optuna.TrialPruned()
def objective(trial):
    rate = trial.suggest_float("learning_rate", 1e-4, 1e-2, log=True)
    batch = trial.suggest_categorical("batch_size", [32, 64, 128])
    keras.utils.set_random_seed(42)
    model = build_mnist_convnet()
    model.compile(optimizer=keras.optimizers.Adam(rate), loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    history = model.fit(x, y, batch_size=batch, epochs={epochs}, validation_data=(vx, vy), callbacks=[Report(trial)],
                        verbose=0)
    return history.history["val_loss"][-1]
sampler = optuna.samplers.TPESampler(seed=0, n_startup_trials=4)
pruner = optuna.pruners.HyperbandPruner(min_resource=1, max_resource={epochs}, reduction_factor=3)
study = optuna.create_study(direction="minimize", sampler=sampler, pruner=pruner)
started = time.perf_counter()
study.optimize(objective, timeout={seconds})
wall = time.perf_counter() - started
states = [t.state.name for t in study.trials]
print(json.dumps({{"wall": wall, "trials": len(states), "pruned": states.count("PRUNED"), "best": study.best_value}}))
"""
    return _last_json(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO))


def _last_json(done: subprocess.CompletedProcess) -> dict:
    if done.returncode != 0:
        raise SystemExit(f"a side failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=150)
    parser.add_argument("--records", type=int, default=6000)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--parallel", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kflow-bench-tuner-") as folder:
        examples, schema = ingest(Path(folder), args.records)
        rounds = []
        for number in range(args.rounds):
            sides = {}
            order = ("kflow", "plain") if number % 2 == 0 else ("plain", "kflow")
            for side in order:
                if side == "kflow":
                    out = Path(folder) / f"round-{number}"
                    sides[side] = kflow_side(examples, schema, args.seconds, args.epochs, args.parallel, out)
                else:
                    sides[side] = plain_side(examples, args.seconds, args.epochs)
                sides[side]["per_hour"] = sides[side]["trials"] / sides[side]["wall"] * 3600
            ratio = sides["kflow"]["per_hour"] / sides["plain"]["per_hour"]
            rounds.append({**sides, "ratio": ratio})
            print(f"round {number + 1}: " + "; ".join(
                f"{side} {s['trials']} trials ({s['pruned']} pruned) in {s['wall']:.0f} s = {s['per_hour']:.0f}/h, "
                f"best val_loss {s['best']:.4f}" for side, s in sides.items()) + f"; trials/h kflow/plain {ratio:.2f}",
                flush=True)  # fmt: skip
    median = {side: statistics.median(r[side]["per_hour"] for r in rounds) for side in ("kflow", "plain")}
    best = {side: statistics.median(r[side]["best"] for r in rounds) for side in ("kflow", "plain")}
    print(
        f"trials an hour, kflow/plain: median of ratios {statistics.median(r['ratio'] for r in rounds):.2f}, "
        f"ratio of medians {median['kflow'] / median['plain']:.2f} ({median['kflow']:.0f} / {median['plain']:.0f})"
    )
    print(
        f"best val_loss in {args.seconds:g} s (lower is better), median: kflow {best['kflow']:.4f}, plain "
        f"{best['plain']:.4f}, plain/kflow {best['plain'] / best['kflow']:.2f}"
    )


if __name__ == "__main__":
    started = time.perf_counter()
    main()
    print(f"({time.perf_counter() - started:.0f} s)")
