"""This machine's dense matmul peak, and how much of it the shipped masked-LM training uses (its model FLOP/s).

    .venv/bin/python bench/peak.py                 # peak float32 (and bfloat16 where the CPU has it), then the MLM
    .venv/bin/python bench/peak.py --no-mlm        # the peak alone
    .venv/bin/python bench/peak.py --json OUT      # also the raw figures

The peak: TensorFlow's matmul of two n×n matrices (2n³ FLOPs) in a tf.function, on every core, timed after a
warm-up; the median of the rounds, the best size of those tried. It is what this CPU's BLAS (oneDNN) reaches on the
best-shaped work, not the data sheet's figure.

The MLM: the model of pipeline/configs/wikitext2.yaml (keras-hub BertMaskedLM, components/models/bert_mlm.py), its
optimizer and batch, trained with `train_on_batch` on token batches of its shape (the same shapes as the Trainer's,
random ids: speed does not depend on the ids) in one process, timed after a warm-up. Its FLOPs are counted by hand
from the model's shape (the usual transformer count: per token and layer 2·(4h² + 2hi) in the projections and
feed-forward plus 4·s·h in attention's two products; the head's 2h² + 2hV per masked position; training 3× the
forward pass; embedding look-ups and element-wise work left out), so the utilisation is the model's FLOPs a second
over the float32 peak: MFU as PaLM defines it. The Trainer's input pipeline and its two-worker
MultiWorkerMirrored split are not in this figure: it is the model's own ceiling on this machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__)
    parser.add_argument("--sizes", default="1024,2048,3072", help="matrix sizes n to try (default %(default)s)")
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds a figure (default %(default)s)")
    parser.add_argument("--no-mlm", action="store_true", help="the peak alone")
    parser.add_argument("--steps", type=int, default=20, help="timed MLM training steps a round (default %(default)s)")
    parser.add_argument("--json", type=Path, help="write the figures here too")
    args = parser.parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    print(f"machine: {_cpu()}, {os.cpu_count()} cores; TensorFlow {tf.__version__}", flush=True)
    figures: dict[str, object] = {"cores": os.cpu_count(), "cpu": _cpu()}
    sizes = [int(size) for size in args.sizes.split(",")]
    for dtype in ("float32", *(["bfloat16"] if _has_bf16() else [])):
        best = max((_matmul_flops(tf, n, dtype, args.rounds), n) for n in sizes)
        figures[f"peak_{dtype}"] = {"flops": best[0], "n": best[1]}
        print(f"peak {dtype}: {best[0] / 1e9:.1f} GFLOP/s (matmul n={best[1]}, median of {args.rounds})", flush=True)
    if not _has_bf16():
        print("peak bfloat16: not measured (the CPU has no avx512_bf16/amx_bf16)")
    if not args.no_mlm:
        mlm = _mlm(tf, args.steps, args.rounds)
        peak = figures["peak_float32"]["flops"]  # type: ignore[index]
        mlm["utilisation"] = mlm["model_flops"] / peak
        figures["mlm"] = mlm
        print(
            f"mlm: {mlm['examples_per_second']:.1f} examples/s × {mlm['flops_per_example'] / 1e9:.2f} GFLOP an example"
            f" = {mlm['model_flops'] / 1e9:.1f} GFLOP/s = {mlm['utilisation']:.1%} of the float32 peak",
            flush=True,
        )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    return 0


def _cpu() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown CPU"


def _has_bf16() -> bool:
    flags = Path("/proc/cpuinfo").read_text()
    return "avx512_bf16" in flags or "amx_bf16" in flags


def _matmul_flops(tf, n: int, dtype: str, rounds: int) -> float:
    a = tf.random.normal((n, n), dtype=tf.float32)
    a, b = tf.cast(a, dtype), tf.cast(tf.transpose(a), dtype)
    repeats = max(1, int(4e10 // (2 * n**3)))  # ~40 GFLOP a round: long enough to time, short on a slow core

    @tf.function
    def product(x, y):
        total = tf.zeros((), tf.float32)
        for _ in tf.range(repeats):
            total += tf.cast(tf.reduce_sum(tf.linalg.matmul(x, y)[0, :1]), tf.float32)
        return total

    product(a, b).numpy()  # trace and warm up
    rates = []
    for _ in range(rounds):
        started = time.perf_counter()
        product(a, b).numpy()
        rates.append(2 * n**3 * repeats / (time.perf_counter() - started))
    return statistics.median(rates)


def _mlm(tf, steps: int, rounds: int) -> dict[str, float]:
    import keras
    import numpy as np
    import yaml

    from kflow.components.models.bert_mlm import build_bert_mlm

    config = yaml.safe_load((REPO / "pipeline" / "configs" / "wikitext2.yaml").read_text())
    options, trainer = config["trainer"]["model_options"], config["trainer"]
    shape = {name: options[name] for name in ("num_layers", "hidden_dim", "num_heads", "intermediate_dim")}
    vocabulary, length = options["vocabulary_size"], options["sequence_length"]
    masked = options["mask_selection_length"]
    batch = trainer["batch_size"]
    model = build_bert_mlm(vocabulary, length, dropout=options["dropout"], **shape)
    settings = trainer["optimizer"]  # Its schedule changes the step size, not the work of a step.
    optimizer = keras.optimizers.AdamW(settings["learning_rate"], weight_decay=settings.get("weight_decay", 0.004))
    model.compile(optimizer=optimizer, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    rng = np.random.default_rng(0)
    inputs = {
        "token_ids": rng.integers(5, vocabulary, (batch, length)).astype("int32"),
        "padding_mask": np.ones((batch, length), "int32"),
        "segment_ids": np.zeros((batch, length), "int32"),
        "mask_positions": np.sort(rng.choice(length, (batch, masked)), axis=1).astype("int32"),
    }
    labels = rng.integers(5, vocabulary, (batch, masked)).astype("int32")
    for _ in range(3):
        model.train_on_batch(inputs, labels)
    rates = []
    for _ in range(rounds):
        started = time.perf_counter()
        for _ in range(steps):
            model.train_on_batch(inputs, labels)
        rates.append(steps * batch / (time.perf_counter() - started))
    per_example = _bert_training_flops(length=length, masked=masked, vocabulary=vocabulary, **shape)
    examples = statistics.median(rates)
    return {
        "examples_per_second": examples,
        "flops_per_example": per_example,
        "model_flops": examples * per_example,
        "batch": batch,
        "sequence_length": length,
    }


def _bert_training_flops(
    *,
    length: int,
    masked: int,
    vocabulary: int,
    num_layers: int,
    hidden_dim: int,
    num_heads: int,
    intermediate_dim: int,
) -> float:
    """One example's training FLOPs (forward + backward = 3 × forward), counted from the model's shape."""
    h, i = hidden_dim, intermediate_dim
    per_token_layer = 2 * (4 * h * h + 2 * h * i) + 4 * length * h
    head = masked * (2 * h * h + 2 * h * vocabulary)
    return 3.0 * (num_layers * length * per_token_layer + head)


if __name__ == "__main__":
    sys.exit(main())
