"""Benchmark: the Trainer's examples/s under each strategy, as ratios to a plain `model.fit`.

Ingests the first `--records` MNIST records (real data, ../shared/datasets/mnist/mnist.npz)
with the mnist_ingest executor into a temporary dir (all into Split-train, so no validation
time is counted), then trains mnist_convnet with the same global batch size and epochs:

- plain        `model.fit` on the same images as in-memory numpy arrays (the reference)
- default      the Trainer executor, strategy default (model.fit on a cached tf.data pipeline)
- default-loop the custom loop (components/trainer/loop.py) in this process, default strategy
- multi_worker_mirrored  the Trainer with a local cluster of 2 worker processes
- parameter_server       the Trainer with 2 workers, 1 PS and a coordinator
- parameter_server-8     the same, 8 steps per scheduled function (trainer.steps_per_execution)
- keras_data_parallel-2dev / keras_model_parallel-2dev / jax_data_parallel-2dev
                         the JAX strategies in one JAX process over 2 XLA host devices
- keras_data_parallel-2proc  two JAX processes on loopback (gloo), one device each

The TensorFlow strategies are compared with a plain fit on TensorFlow, the JAX ones with a plain
fit on JAX (the same model and images), each in a fresh process as a user's script runs: this one
has kflow's Trainer in it, which sets the heap up for training (components/trainer/heap.py).

Trainer figures are the examples/s the Trainer measures around its training epochs (first
epoch included: tracing, cache filling); the wall column adds start-up (processes, TF import,
data counting, export). On one machine the cluster processes share the same CPU cores.

Each Trainer run follows its own plain fit (ratios pair runs that are close in time, as this
machine is shared and noisy); the summary is the median ratio over --rounds, and the ratio of the two
sides' medians (a single plain fit here varies by up to 1.7x between rounds, which moves a round's ratio).

Usage: .venv/bin/python bench/trainer_strategies.py [--records 12000] [--epochs 2] [--batch-size 128] [--rounds 3]
       [--strategies default,keras_data_parallel-2proc,...]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path

from baselines import plain_fit_on  # bench/, the script's folder

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO.parent / "shared" / "datasets" / "mnist"
# Each benchmarked run: its Trainer parameters (besides epochs and batch size).
RUNS = {
    "default": {"strategy": "default"},
    "default-loop": {"strategy": "default"},  # the custom loop, called directly
    "multi_worker_mirrored": {"strategy": "multi_worker_mirrored", "workers": 2},
    "parameter_server": {"strategy": "parameter_server", "workers": 2, "parameter_servers": 1},
    # 8 steps per scheduled function, as TensorFlow's parameter-server tutorial sets Keras' steps_per_execution
    "parameter_server-8": {
        "strategy": "parameter_server",
        "workers": 2,
        "parameter_servers": 1,
        "steps_per_execution": 8,
    },
    "keras_data_parallel-2dev": {"strategy": "keras_data_parallel", "workers": 1, "devices": 2},
    "keras_data_parallel-2proc": {"strategy": "keras_data_parallel", "workers": 2},
    "keras_model_parallel-2dev": {"strategy": "keras_model_parallel", "workers": 1, "devices": 2},
    "jax_data_parallel-2dev": {"strategy": "jax_data_parallel", "workers": 1, "devices": 2},
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--records", type=int, default=12000)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=3, help="against this noisy shared machine")
    parser.add_argument("--strategies", default=",".join(RUNS), help=f"some of {', '.join(RUNS)}")
    args = parser.parse_args()
    unknown = sorted(set(args.strategies.split(",")) - set(RUNS))
    if unknown:
        parser.error(f"--strategies: unknown {', '.join(unknown)} (known: {', '.join(RUNS)})")
    if not (args.data / "mnist.npz").exists():
        print(f"no mnist.npz under {args.data}: pass --data", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.WARNING)

    from kflow.components.datasets.mnist.ingest.executor import run as ingest
    from kflow.components.datasets.mnist.task import MnistTask
    from kflow.components.trainer import loop
    from kflow.components.trainer.config import TrainConfig
    from kflow.components.trainer.executor import run as trainer
    from kflow.components.trainer.strategies import get_strategy
    from kflow.components.util.schema import load_schema
    from kflow.pipeline.dsl.artifacts import Examples, Model, ModelRun, Rejects, Schema

    strategies = args.strategies.split(",")
    ratios: dict[str, list[float]] = {name: [] for name in strategies}
    speeds: dict[str, list[tuple[float, float]]] = {name: [] for name in strategies}  # (kflow, plain) a round
    print(
        f"Trainer strategies on MNIST ({args.records} real train records, {args.epochs} epochs, batch "
        f"{args.batch_size}); each run right after its own plain model.fit, {args.rounds} rounds"
    )
    with tempfile.TemporaryDirectory() as temp:
        root = Path(temp)
        examples, schema = Examples(root / "examples"), Schema(root / "schema")
        ingest(
            examples=examples,
            schema=schema,
            rejects=Rejects(root / "rejects"),
            source_path=str(args.data / "mnist.npz"),
            split={"train": 1},
            max_records=args.records,
        )
        for round_number in range(1, args.rounds + 1):
            for name in strategies:
                backend = get_strategy(RUNS[name]["strategy"]).backend
                plain = plain_fit_on(backend, args.data, args.records, args.epochs, args.batch_size)
                out = root / f"{name}-{round_number}"
                model, model_run = Model(out / "model"), ModelRun(out / "model_run")
                started = time.perf_counter()
                if name == "default-loop":
                    config = TrainConfig(epochs=args.epochs, batch_size=args.batch_size, shuffle_buffer=10000)
                    summary = loop.train(
                        MnistTask(load_schema(schema.file)),
                        examples=examples,
                        model=model,
                        model_run=model_run,
                        config=config,
                    )
                else:
                    summary = trainer(
                        dataset="mnist",
                        examples=examples,
                        schema=schema,
                        model=model,
                        model_run=model_run,
                        epochs=args.epochs,
                        batch_size=args.batch_size,
                        **RUNS[name],
                    )
                wall = time.perf_counter() - started
                speed = summary["examples_per_second"]
                ratios[name].append(speed / plain)
                speeds[name].append((speed, plain))
                print(
                    f"  round {round_number} {name:<26} {speed:6.0f} ex/s, plain {backend} {plain:6.0f} ex/s: "
                    f"ratio {speed / plain:5.2f}, wall {wall:5.1f} s",
                    flush=True,
                )
    print(f"\nratio to a plain model.fit on the same backend over {args.rounds} rounds: the median of the rounds'")
    print("ratios; the ratio of the medians (kflow's median examples/s over the plain fits')")
    for name in strategies:
        kflow, plain = (statistics.median(side) for side in zip(*speeds[name], strict=True))
        print(f"  {name:<28} {statistics.median(ratios[name]):5.2f}   {kflow / plain:5.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
