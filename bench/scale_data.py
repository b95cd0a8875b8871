"""Scale data, made deterministically outside the repo: Quora-format CSVs from the real sample, tabular CSVs.

Quora (`quora --rows 1306122`, the real training set's size): each row recombines two questions
of ../shared/datasets/quora-insincere/train_sample.csv (the first half of one, the second half of
another, both of the same label, so an insincere question stays insincere), swaps one word for
another word of the sample (a small perturbation), and quotes the text when it holds a comma,
as Kaggle's file does. The label keeps the real set's positive rate (6.2 %, drawn per row),
the qid is 20 hex digits. Seed 0: the same arguments give the same bytes.

WikiText (`wikitext --times 10`): a folder of train/valid/test.txt, WikiText-2's files (../shared/datasets/
wikitext-2) repeated N times, every copy after the first with one word of each text line swapped for a word
of the training text (headings and blank lines kept), so that a repeat is no duplicate line.

MNIST (`mnist --times 10`): a folder of the four gzipped IDX files, MNIST's images ×N (train and test), every copy
after the first shifted by one or two pixels up, down, left or right (a shift drawn per image; the digit keeps
its label), the labels repeated. Read from ../shared/datasets/mnist/mnist.npz; written a copy at a time.

Tabular (`tabular --rows N`): 4 floats (one with 2 % missing values, "NA"), 2 ints, 2 categorical
strings, a bool, a short text and a 3-class label that depends on the features (learnable, not noise).

Usage: .venv/bin/python bench/scale_data.py quora --rows 1306122 --out /tmp/kflow-scale/quora-1306122.csv
       .venv/bin/python bench/scale_data.py mnist --times 10 --out /tmp/kflow-scale/mnist-x10
"""

from __future__ import annotations

import argparse
import csv
import gzip
import random
import shutil
import struct
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
QUORA_SAMPLE = REPO.parent / "shared" / "datasets" / "quora-insincere" / "train_sample.csv"
POSITIVE_RATE = 0.062  # 80,810 of the 1,306,122 rows of the competition's train.csv


def quora(sample: Path, rows: int, out: Path, seed: int = 0) -> None:
    """`rows` Quora-format rows recombined from the `sample`'s questions."""
    with sample.open(newline="", encoding="utf-8") as file:
        records = list(csv.DictReader(file))
    by_label = {label: [r["question_text"].split() for r in records if r["target"] == label] for label in "01"}
    vocabulary = sorted({word for words in by_label["0"] + by_label["1"] for word in words})
    rng = random.Random(seed)
    partial = out.with_suffix(".partial")
    with partial.open("w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file, lineterminator="\n")
        writer.writerow(["qid", "question_text", "target"])
        for _ in range(rows):
            label = "1" if rng.random() < POSITIVE_RATE else "0"
            first, second = rng.choice(by_label[label]), rng.choice(by_label[label])
            words = first[: max(1, len(first) // 2)] + second[len(second) // 2 :]
            words[rng.randrange(len(words))] = rng.choice(vocabulary)
            writer.writerow([f"{rng.getrandbits(80):020x}", " ".join(words), label])
    shutil.move(partial, out)


TABULAR_COLUMNS = ["f1", "f2", "f3", "f4", "n1", "n2", "colour", "city", "flag", "note", "label"]
WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma".split()
CITIES = [f"city{i:03d}" for i in range(120)]
COLOURS = ["red", "green", "blue", "amber", "violet"]


def tabular(rows: int, out: Path, seed: int = 0) -> None:
    rng = random.Random(seed)
    partial = out.with_suffix(".partial")
    with partial.open("w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(TABULAR_COLUMNS)
        for _ in range(rows):
            f1, f2, f3, f4 = (round(rng.gauss(0, 1), 4) for _ in range(4))
            colour = rng.choice(COLOURS)
            score = f1 + 0.5 * f2 + (0.8 if colour == "red" else 0)
            label = "high" if score > 0.7 else "low" if score < -0.7 else "mid"
            note = " ".join(rng.choices(WORDS, k=rng.randint(1, 5)))
            writer.writerow(
                [f1, f2, "NA" if rng.random() < 0.02 else f3, f4, rng.randint(0, 99), rng.randint(-5, 5000)]
                + [colour, rng.choice(CITIES), rng.choice(["true", "false"]), note, label]
            )
    shutil.move(partial, out)


WIKITEXT = REPO.parent / "shared" / "datasets" / "wikitext-2"
WIKITEXT_FILES = ("train.txt", "valid.txt", "test.txt")


def wikitext(source: Path, times: int, out: Path, seed: int = 0) -> None:
    """WikiText-2 ×`times` into the folder `out`: each file repeated; every copy after the first swaps one word of
    each text line (not blank lines or headings) for a word of the training text, so repeats are not duplicates."""
    rng = random.Random(seed)
    vocabulary = sorted(set((source / "train.txt").read_text(encoding="utf-8").split()))
    out.mkdir(parents=True, exist_ok=True)
    for name in WIKITEXT_FILES:
        lines = (source / name).read_text(encoding="utf-8").splitlines(keepends=True)
        partial = out / f"{name}.partial"
        with partial.open("w", encoding="utf-8", newline="") as file:
            for copy in range(times):
                for line in lines:
                    body = line.rstrip("\n")
                    if copy and body.strip() and not body.strip().startswith("="):
                        words = body.split(" ")
                        filled = [index for index, word in enumerate(words) if word]
                        words[rng.choice(filled)] = rng.choice(vocabulary)
                        line = " ".join(words) + line[len(body) :]
                    file.write(line)
        partial.rename(out / name)


MNIST = REPO.parent / "shared" / "datasets" / "mnist"
MNIST_FILES = {"train": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz")}
MNIST_FILES["test"] = ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")
SHIFTS = [(dy, dx) for dy in range(-2, 3) for dx in range(-2, 3) if (dy, dx) != (0, 0)]


def mnist(source: Path, times: int, out: Path, seed: int = 0) -> None:
    """MNIST ×`times` as gzipped IDX files in the folder `out` (see the module's docstring)."""
    rng = np.random.default_rng(seed)
    out.mkdir(parents=True, exist_ok=True)
    with np.load(source / "mnist.npz") as data:
        arrays = {split: (data[f"x_{split}"], data[f"y_{split}"]) for split in MNIST_FILES}
    for split, (images, labels) in arrays.items():
        for array, name in zip((images, labels), MNIST_FILES[split], strict=True):
            count = len(array) * times
            header = bytes([0, 0, 0x08, array.ndim]) + struct.pack(f">{array.ndim}I", count, *array.shape[1:])
            partial = out / f"{name}.partial"
            # No time or name in the gzip header: the same data gives the same bytes.
            with open(partial, "wb") as raw, gzip.GzipFile("", "wb", compresslevel=6, fileobj=raw, mtime=0) as file:
                file.write(header)
                for copy in range(times):
                    file.write((_shifted(array, rng) if copy and array.ndim == 3 else array).tobytes())
            partial.rename(out / name)


def _shifted(images: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Each image moved by a shift drawn from SHIFTS, the pixels moved in filled with zeros."""
    choice = rng.integers(len(SHIFTS), size=len(images))
    moved = np.zeros_like(images)
    height, width = images.shape[1:]
    for index, (dy, dx) in enumerate(SHIFTS):
        which = choice == index
        target = moved[which]
        target[:, max(dy, 0) : height + min(dy, 0), max(dx, 0) : width + min(dx, 0)] = images[
            which, max(-dy, 0) : height + min(-dy, 0), max(-dx, 0) : width + min(-dx, 0)
        ]
        moved[which] = target
    return moved


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dataset", choices=["quora", "tabular", "wikitext", "mnist"])
    parser.add_argument("--rows", type=int, default=1_306_122)
    parser.add_argument("--times", type=int, default=10, help="wikitext, mnist: copies of the dataset")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--sample", type=Path, default=QUORA_SAMPLE)
    args = parser.parse_args()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    if args.dataset == "tabular":
        tabular(args.rows, args.out)
        return 0
    if args.dataset == "wikitext":
        wikitext(WIKITEXT, args.times, args.out)
        return 0
    if args.dataset == "mnist":
        mnist(MNIST, args.times, args.out)
        return 0
    if not args.sample.is_file():
        print(f"missing {args.sample} (see ../shared/datasets/README.md)", file=sys.stderr)
        return 1
    quora(args.sample, args.rows, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
