"""Benchmark: each ingest component (its executor call) against a plain single-process script.

For WikiText-2 train, the Quora sample and MNIST, times, in this process and after the
imports (TensorFlow, Beam) are warm:

- component: the ingest executor with its default Beam options (DirectRunner, in memory,
  one worker, 4 shards a split), including its schema validation, rejects and stats;
- plain: a single-process Python loop doing the same parse + filter + serialise to
  tf.train.Example + write gzipped TFRecord files, without Beam.

Prints the ratio component time / plain time; goal ≤ 2.0 for WikiText-2 train and MNIST.
Each figure is the best of --repeat runs.

Usage: .venv/bin/python bench/ingest.py [--data ../shared/datasets] [--repeat 2]
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
REPO = Path(__file__).resolve().parents[1]

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from kflow.components.datasets.mnist.ingest.executor import run as mnist_run  # noqa: E402
from kflow.components.datasets.quora.ingest.executor import run as quora_run  # noqa: E402
from kflow.components.datasets.wikitext2.ingest.executor import run as wikitext2_run  # noqa: E402
from kflow.pipeline.dsl.artifacts import Examples, Rejects, Schema  # noqa: E402

DEFAULT_DATA = REPO.parent / "shared" / "datasets"
BEAM_ARGS = ["--runner=DirectRunner", "--direct_num_workers=1", "--direct_running_mode=in_memory"]


def _outputs(folder: Path) -> dict:
    return {"examples": Examples(folder / "e"), "schema": Schema(folder / "s"), "rejects": Rejects(folder / "r")}


def _example(**features) -> bytes:
    example = tf.train.Example()
    for name, value in features.items():
        if isinstance(value, int):
            example.features.feature[name].int64_list.value.append(value)
        else:
            example.features.feature[name].bytes_list.value.append(value)
    return example.SerializeToString()


def _write(folder: Path, split: str, records: list[bytes]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    with tf.io.TFRecordWriter(str(folder / f"{split}.gz"), options="GZIP") as writer:
        for record in records:
            writer.write(record)


def plain_wikitext2(train: Path, out: Path) -> int:
    kept = []
    for number, raw in enumerate(train.read_bytes().split(b"\n")[:-1], 1):
        line = raw.decode("utf-8")
        stripped = line.strip()
        if not stripped or (stripped.startswith("= ") and stripped.endswith(" =")) or len(line) <= 100:
            continue
        kept.append(_example(text=stripped.encode(), key=f"train-{number:07d}".encode()))
    _write(out, "train", kept)
    return len(kept)


def plain_quora(path: Path, out: Path) -> int:
    splits = {"train": [], "eval": [], "test": []}
    reader = csv.reader(io.StringIO(path.read_text(encoding="utf-8")))
    next(reader)
    for qid, text, target in reader:
        text = text.strip()
        if not text or target not in ("0", "1") or len(text) > 1000:
            continue
        bucket = hash(qid) % 10
        split = "train" if bucket < 8 else "eval" if bucket == 8 else "test"
        splits[split].append(_example(qid=qid.encode(), text=text.encode(), label=int(target)))
    for split, records in splits.items():
        _write(out, split, records)
    return sum(map(len, splits.values()))


def plain_mnist(npz: Path, out: Path) -> int:
    with np.load(npz) as data:
        arrays = {name: data[name] for name in ("x_train", "y_train", "x_test", "y_test")}
    count = 0
    for split, x, y in (("train", "x_train", "y_train"), ("test", "x_test", "y_test")):
        images, labels = arrays[x], arrays[y]
        assert images.shape[1:] == (28, 28) and images.dtype == np.uint8 and ((labels >= 0) & (labels <= 9)).all()
        records = [
            _example(image=images[i].tobytes(), label=int(labels[i]), key=f"{split}-{i:05d}".encode())
            for i in range(len(labels))
        ]
        _write(out, split, records)
        count += len(records)
    return count


def accepted(summary: dict) -> int:
    """Records an ingest component wrote, from its summary (one call of the component)."""
    return sum(summary[split] for split in ("train", "eval", "test"))


def best_of(repeat: int, function, *args) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="kflow-bench-") as folder:
            start = time.perf_counter()
            result = function(*args, Path(folder))
            best = min(best, time.perf_counter() - start)
    return best, result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    wikitext, quora, mnist = args.data / "wikitext-2", args.data / "quora-insincere", args.data / "mnist"
    for path in (wikitext / "train.txt", quora / "train_sample.csv", mnist / "mnist.npz"):
        if not path.is_file():
            print(f"missing {path} (see ../shared/datasets/README.md)", file=sys.stderr)
            return 1

    with tempfile.TemporaryDirectory(prefix="kflow-bench-wikitext-") as only_train:
        # The component reads three files: give it the real train.txt and empty valid/test files.
        (Path(only_train) / "train.txt").symlink_to(wikitext.resolve() / "train.txt")
        (Path(only_train) / "valid.txt").write_text("")
        (Path(only_train) / "test.txt").write_text("")
        cases = [
            (
                "wikitext2 train",
                lambda out: wikitext2_run(
                    **_outputs(out), source_path=only_train, shards_per_split=4, beam_args=BEAM_ARGS
                )["train"],
                lambda out: plain_wikitext2(wikitext / "train.txt", out),
            ),
            (
                "quora sample",
                lambda out: accepted(
                    quora_run(
                        **_outputs(out),
                        source_path=str(quora / "train_sample.csv"),
                        shards_per_split=4,
                        beam_args=BEAM_ARGS,
                    )
                ),
                lambda out: plain_quora(quora / "train_sample.csv", out),
            ),
            (
                "mnist",
                lambda out: accepted(
                    mnist_run(
                        **_outputs(out),
                        source_path=str(mnist),
                        source_format="npz",
                        shards_per_split=4,
                        beam_args=BEAM_ARGS,
                    )
                ),
                lambda out: plain_mnist(mnist / "mnist.npz", out),
            ),
        ]
        print(f"{'ingest':<16} {'records':>8} {'component s':>12} {'plain s':>8} {'ratio':>6}  goal")
        for name, component, plain in cases:
            component_s, written = best_of(args.repeat, component)
            plain_s, plain_written = best_of(args.repeat, plain)
            goal = "" if name == "quora sample" else ("≤ 2.0 ok" if component_s / plain_s <= 2.0 else "≤ 2.0 MISSED")
            print(f"{name:<16} {written:>8} {component_s:>12.2f} {plain_s:>8.2f} {component_s / plain_s:>6.2f}  {goal}")
            if name != "quora sample" and written != plain_written:
                print(f"  note: the component wrote {written} records, the plain script {plain_written}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
