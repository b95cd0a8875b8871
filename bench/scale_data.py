"""Scale data made from the real samples, deterministically, outside the repo: a Quora-format CSV of any size.

Quora (`quora --rows 1306122`, the real training set's size): each row recombines two questions
of ../shared/datasets/quora-insincere/train_sample.csv (the first half of one, the second half of
another, both of the same label, so an insincere question stays insincere), swaps one word for
another word of the sample (a small perturbation), and quotes the text when it holds a comma,
as Kaggle's file does. The label keeps the real set's positive rate (6.2 %, drawn per row),
the qid is 20 hex digits. Seed 0: the same arguments give the same bytes.

Usage: .venv/bin/python bench/scale_data.py quora --rows 1306122 --out /tmp/kflow-scale/quora-1306122.csv
"""

from __future__ import annotations

import argparse
import csv
import random
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
QUORA_SAMPLE = REPO.parent / "shared" / "datasets" / "quora-insincere" / "train_sample.csv"
POSITIVE_RATE = 0.062  # 80,810 of the 1,306,122 rows of the competition's train.csv


def quora(sample: Path, rows: int, out: Path, seed: int = 0) -> None:
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dataset", choices=["quora"])
    parser.add_argument("--rows", type=int, default=1_306_122)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--sample", type=Path, default=QUORA_SAMPLE)
    args = parser.parse_args()
    if not args.sample.is_file():
        print(f"missing {args.sample} (see ../shared/datasets/README.md)", file=sys.stderr)
        return 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    quora(args.sample, args.rows, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
