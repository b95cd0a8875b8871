"""Benchmark: how the ingests' cost grows with the data, against a plain single-process script.

Datasets, made deterministically (seed 0) outside the repo by bench/scale_data.py and kept in --folder:
- tabular: generated CSVs of --rows/4 and --rows records (4 floats, one with 2 % missing values,
  2 ints, 2 categorical strings, a bool, a short text, a 3-class label), through the csv ingest;
- quora: Quora-format CSVs recombined from the real sample, at 1× (999 rows), 10× and the real
  training set's size (1,306,122 rows), through the Quora ingest;
- wikitext: WikiText-2 itself (1×) and WikiText-2 ×10 (--wikitext-times), through the WikiText-2 ingest
  (its filters: blank lines, headings, lines under 101 characters); sizes are lines read;
- mnist: MNIST's four gzipped IDX files (1×, 70,000 images) and MNIST ×10 (--mnist-times: shifted copies),
  through the MNIST ingest (`source_format: idx`).

Runs, alternated in each round:
- plain: one Python loop: parse, type, tf.train.Example, a split by hash, gzipped TFRecord files;
- kflow: the ingest executor on the DirectRunner with one worker, in memory (`direct_num_workers=1`), automatic shards
  per split: validation, rejects, stratified split, stats;
- kflow-2: the same with `direct_num_workers=2, direct_running_mode=multi_processing` (what kflow chooses by
  default on this 2-core machine from ingest_options.PARALLEL_RECORDS records on, when the options choose none).

Each run is a process of its own (imports done before the clock starts), so its peak RSS
(`ru_maxrss` from wait4) is its own; kflow-2's SDK worker processes are not in it. "over imports"
is that peak less the RSS after the imports (TensorFlow and Beam alone hold ~800 MB). Prints
medians of --rounds, ratios to the plain script, and the peak memory ratio between the sizes.

Usage: .venv/bin/python bench/ingest_scale.py [--datasets tabular,quora,wikitext,mnist] [--rows 1000000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import csv
import gzip
import hashlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import scale_data  # noqa: E402

TYPES = {"f1": "float", "f2": "float", "f3": "float", "f4": "float", "n1": "int", "n2": "int"}
TYPES |= {"colour": "string", "city": "string", "flag": "bool", "note": "string", "label": "string"}
MISSING = {"", "NA", "NaN", "null"}
WORKERS_1 = ["--direct_num_workers=1", "--direct_running_mode=in_memory"]
WORKERS_2 = ["--direct_num_workers=2", "--direct_running_mode=multi_processing"]
QUORA_SIZES = (999, 9_990, 1_306_122)
WIKITEXT_SPLITS = {"train.txt": "train", "valid.txt": "eval", "test.txt": "test"}


def _split_of(text: str) -> str:
    bucket = int.from_bytes(hashlib.sha1(text.encode()).digest()[:8], "big") % 10
    return "train" if bucket < 8 else "eval" if bucket == 8 else "test"


def plain(dataset: str, source: Path, out: Path) -> int:
    """The plain single-process script: stream the CSV, parse, type, serialise, split by hash, write gzipped
    TFRecords (Quora: as bench/ingest.py's plain script, the same filters; MNIST: the IDX arrays read whole)."""
    import tensorflow as tf

    out.mkdir(parents=True, exist_ok=True)
    writers = {
        split: tf.io.TFRecordWriter(str(out / f"{split}.gz"), options="GZIP") for split in ("train", "eval", "test")
    }
    written = 0
    if dataset == "mnist":
        for source_split, (images_file, labels_file) in scale_data.MNIST_FILES.items():
            images = np.frombuffer(gzip.decompress((source / images_file).read_bytes()), np.uint8, offset=16)
            labels = np.frombuffer(gzip.decompress((source / labels_file).read_bytes()), np.uint8, offset=8)
            images = images.reshape(len(labels), -1)
            for index in range(len(labels)):
                key = f"{source_split}-{index:05d}"
                example = tf.train.Example()
                example.features.feature["image"].bytes_list.value.append(images[index].tobytes())
                example.features.feature["label"].int64_list.value.append(int(labels[index]))
                example.features.feature["key"].bytes_list.value.append(key.encode())
                split = "test" if source_split == "test" else "eval" if _split_of(key) == "test" else "train"
                writers[split].write(example.SerializeToString())
                written += 1
        for writer in writers.values():
            writer.close()
        return written
    if dataset == "wikitext":
        for name, split in WIKITEXT_SPLITS.items():
            with (source / name).open(encoding="utf-8") as file:
                for number, line in enumerate(file, 1):
                    line = line.rstrip("\n")
                    stripped = line.strip()
                    if not stripped or stripped.startswith("= ") or len(line) < 101:
                        continue
                    example = tf.train.Example()
                    example.features.feature["text"].bytes_list.value.append(stripped.encode())
                    example.features.feature["key"].bytes_list.value.append(f"{split}-{number:07d}".encode())
                    writers[split].write(example.SerializeToString())
                    written += 1
        for writer in writers.values():
            writer.close()
        return written
    with source.open(newline="", encoding="utf-8") as file:
        reader = csv.reader(file)
        header = next(reader)
        for row in reader:
            if len(row) != len(header):
                continue
            example = tf.train.Example()
            features = example.features.feature
            if dataset == "quora":
                qid, text, target = row
                text = text.strip()
                if not text or target not in ("0", "1") or len(text) > 1000:
                    continue
                features["qid"].bytes_list.value.append(qid.encode())
                features["text"].bytes_list.value.append(text.encode())
                features["label"].int64_list.value.append(int(target))
                split = _split_of(qid)
            else:
                for name, text in zip(header, row, strict=True):
                    if text.strip() in MISSING:
                        continue
                    kind = TYPES[name]
                    if kind == "float":
                        features[name].float_list.value.append(float(text))
                    elif kind == "int":
                        features[name].int64_list.value.append(int(text))
                    elif kind == "bool":
                        features[name].int64_list.value.append(int(text.strip().lower() == "true"))
                    else:
                        features[name].bytes_list.value.append(text.encode())
                split = _split_of(",".join(row))
            writers[split].write(example.SerializeToString())
            written += 1
    for writer in writers.values():
        writer.close()
    return written


def run_kflow(dataset: str, source: Path, out: Path, beam_args: list[str]) -> int:
    from kflow.pipeline.dsl.artifacts import Examples, Rejects, Schema

    artifacts = {
        "examples": Examples(out / "examples"),
        "schema": Schema(out / "schema"),
        "rejects": Rejects(out / "r"),
    }
    if dataset == "quora":
        from kflow.components.datasets.quora.ingest.executor import run

        summary = run(**artifacts, source_path=str(source), beam_args=beam_args)
    elif dataset == "wikitext":
        from kflow.components.datasets.wikitext2.ingest.executor import run

        summary = run(**artifacts, source_path=str(source), beam_args=beam_args)
    elif dataset == "mnist":
        from kflow.components.datasets.mnist.ingest.executor import run

        summary = run(**artifacts, source_path=str(source), source_format="idx", beam_args=beam_args)
        return sum(summary[split] for split in ("train", "eval", "test"))
    else:
        from kflow.components.datasets.csv.ingest.executor import run

        summary = run(**artifacts, source_path=str(source), label="label", beam_args=beam_args)
    return sum(summary[split] for split in ("train", "eval", "test"))


def child(dataset: str, kind: str, source: Path) -> None:
    """One measured run in this process; prints {"seconds", "records", "imported_mb"} as JSON."""
    import apache_beam  # noqa: F401  (imports before the clock)
    import tensorflow  # noqa: F401

    import kflow.components.datasets.csv.ingest.executor  # noqa: F401
    import kflow.components.datasets.mnist.ingest.executor  # noqa: F401
    import kflow.components.datasets.quora.ingest.executor  # noqa: F401
    import kflow.components.datasets.wikitext2.ingest.executor  # noqa: F401

    imported_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    with tempfile.TemporaryDirectory(prefix="kflow-bench-scale-out-") as folder:
        started = time.perf_counter()
        if kind == "plain":
            records = plain(dataset, source, Path(folder))
        else:
            records = run_kflow(dataset, source, Path(folder), WORKERS_2 if kind == "kflow-2" else WORKERS_1)
        seconds = time.perf_counter() - started
    print(json.dumps({"seconds": seconds, "records": records, "imported_mb": imported_mb}))


def measure(dataset: str, kind: str, source: Path) -> dict:
    """Runs `child` in a new process; adds its peak RSS in MB."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    command = [sys.executable, __file__, "--child", dataset, kind, str(source)]
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    output = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{kind} on {source} failed (exit {os.waitstatus_to_exitcode(status)})")
    result = json.loads(output.strip().splitlines()[-1])
    return {**result, "peak_mb": usage.ru_maxrss / 1024}


def sources(dataset: str, rows: int, folder: Path, wikitext_times: int = 10, mnist_times: int = 10) -> dict[int, Path]:
    """The dataset's input files by size, made when missing."""
    if dataset == "mnist":
        made = {70_000: scale_data.MNIST, 70_000 * mnist_times: folder / f"mnist-x{mnist_times}"}
        if not (made[70_000 * mnist_times] / scale_data.MNIST_FILES["test"][1]).is_file():
            print(f"generating {made[70_000 * mnist_times]} ...", flush=True)
            scale_data.mnist(scale_data.MNIST, mnist_times, made[70_000 * mnist_times])
        return made
    if dataset == "wikitext":
        made = {1: scale_data.WIKITEXT, wikitext_times: folder / f"wikitext-x{wikitext_times}"}
        if not (made[wikitext_times] / "test.txt").is_file():
            print(f"generating {made[wikitext_times]} ...", flush=True)
            scale_data.wikitext(scale_data.WIKITEXT, wikitext_times, made[wikitext_times])
        return {_lines(path): path for path in made.values()}
    sizes = QUORA_SIZES if dataset == "quora" else sorted({rows // 4, rows})
    made = {}
    for size in sizes:
        made[size] = folder / f"{dataset}-{size}.csv"
        if not made[size].is_file():
            print(f"generating {made[size]} ...", flush=True)
            if dataset == "quora":
                scale_data.quora(scale_data.QUORA_SAMPLE, size, made[size])
            else:
                scale_data.tabular(size, made[size])
    return made


def _lines(folder: Path) -> int:
    """Lines read by the WikiText-2 ingest in a folder of its three files."""
    return sum(sum(1 for _ in (folder / name).open("rb")) for name in WIKITEXT_SPLITS)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", default="tabular,quora")
    parser.add_argument("--rows", type=int, default=1_000_000, help="the larger tabular size")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--folder", type=Path, default=Path(tempfile.gettempdir()) / "kflow-scale")
    parser.add_argument("--kinds", default="plain,kflow,kflow-2")
    parser.add_argument("--wikitext-times", type=int, default=10, help="the larger WikiText size (×50: 50)")
    parser.add_argument("--mnist-times", type=int, default=10, help="the larger MNIST size")
    parser.add_argument("--child", nargs=3, metavar=("DATASET", "KIND", "CSV"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], args.child[1], Path(args.child[2]))
        return 0
    if "wikitext" in args.datasets and not (scale_data.WIKITEXT / "train.txt").is_file():
        print(f"missing {scale_data.WIKITEXT} (see ../shared/datasets/README.md)", file=sys.stderr)
        return 1
    if "mnist" in args.datasets and not (scale_data.MNIST / "mnist.npz").is_file():
        print(f"missing {scale_data.MNIST} (see ../shared/datasets/README.md)", file=sys.stderr)
        return 1
    if "quora" in args.datasets and not scale_data.QUORA_SAMPLE.is_file():
        print(f"missing {scale_data.QUORA_SAMPLE} (see ../shared/datasets/README.md)", file=sys.stderr)
        return 1
    args.folder.mkdir(parents=True, exist_ok=True)
    inputs = {
        dataset: sources(dataset, args.rows, args.folder, args.wikitext_times, args.mnist_times)
        for dataset in args.datasets.split(",")
    }
    kinds = args.kinds.split(",")
    results: dict[tuple[str, int, str], list[dict]] = {}
    for round_number in range(args.rounds):
        for dataset, by_size in inputs.items():
            for size, source in by_size.items():
                for kind in kinds if round_number % 2 == 0 else kinds[::-1]:
                    result = measure(dataset, kind, source)
                    results.setdefault((dataset, size, kind), []).append(result)
                    print(
                        f"  round {round_number + 1} {dataset} {size:>9,} rows {kind:<8} {result['seconds']:7.1f} s "
                        f"{result['peak_mb']:6.0f} MB (imports {result['imported_mb']:4.0f} MB)",
                        flush=True,
                    )
    print(
        f"\n{'dataset':<8} {'rows':>10} {'run':<9} {'records':>9} {'median s':>9} {'records/s':>10} {'vs plain':>9} "
        f"{'peak MB':>8} {'over imports':>13}"
    )
    for dataset, by_size in inputs.items():
        for size in by_size:
            plain_runs = results.get((dataset, size, "plain"))
            plain_s = statistics.median(r["seconds"] for r in plain_runs) if plain_runs else float("nan")
            for kind in kinds:
                runs = results[(dataset, size, kind)]
                seconds = statistics.median(r["seconds"] for r in runs)
                peak = statistics.median(r["peak_mb"] for r in runs)
                growth = statistics.median(r["peak_mb"] - r["imported_mb"] for r in runs)
                print(
                    f"{dataset:<8} {size:>10,} {kind:<9} {runs[0]['records']:>9,} {seconds:>9.1f} "
                    f"{size / seconds:>10,.0f} {seconds / plain_s:>9.2f} {peak:>8.0f} {growth:>13.0f}"
                )
        smallest, largest = min(by_size), max(by_size)
        for kind in kinds:
            ratio = statistics.median(r["peak_mb"] for r in results[(dataset, largest, kind)]) / statistics.median(
                r["peak_mb"] for r in results[(dataset, smallest, kind)]
            )
            print(f"{dataset} peak memory {kind}: {largest:,} rows / {smallest:,} rows = {ratio:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
