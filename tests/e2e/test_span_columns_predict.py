"""`kflow predict` after spans whose columns changed: a column the older spans hold and the newest lacks.

A user trial split dslabs' 2016 polls by quarter; the newest span's export dropped `rawpoll_johnson`. The run
trained on every span (the older spans' values of it too) and blessed the model; `kflow predict` of new rows that
held the column then failed in a traceback ("Key: rawpoll_johnson ... Data type: string but expected type: float"):
the union's schema is the newest span's, which lacks the column, and the scoring ingest read it as strings.
"""

from __future__ import annotations

import csv
import random

import pytest

CONFIG = """\
name: polls
pipeline_root: {root}/runs
data:
  dataset: csv
  source: {{path: "data/polls-{{SPAN}}.csv"}}
  label: share
  problem_type: regression
  spans: all
trainer: {{epochs: 1}}
"""


def write(path, rows, johnson=True, seed=0):
    rng = random.Random(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(["grade", "samplesize", "rawpoll_trump", *(["rawpoll_johnson"] if johnson else []), "share"])
        for _ in range(rows):
            trump, johnson_share = rng.uniform(30, 50), rng.uniform(2, 10)
            share = 100 - trump - johnson_share + rng.gauss(0, 2)
            writer.writerow([rng.choice("ABC"), rng.randint(300, 3000), round(trump, 1),
                             *([round(johnson_share, 1)] if johnson else []), round(share, 2)])  # fmt: skip


@pytest.mark.slow  # ~35 s; make test scores spans' columns in tests/e2e/test_predict.py
def test_a_column_the_newest_span_dropped_is_scored_as_a_number(tmp_path, run_kflow):
    write(tmp_path / "data" / "polls-1.csv", 200, johnson=True, seed=1)
    write(tmp_path / "data" / "polls-2.csv", 200, johnson=False, seed=2)
    config = tmp_path / "polls.yaml"
    config.write_text(CONFIG.format(root=tmp_path))
    ran = run_kflow("run", config)
    assert ran.returncode == 0, ran.stderr[-3000:]
    new = tmp_path / "new.csv"
    write(new, 5, johnson=True, seed=3)
    scored = run_kflow("predict", config, "--data", new, "-o", tmp_path / "scored")
    assert scored.returncode == 0, scored.stderr[-3000:]
    assert "Traceback" not in scored.stderr
    lines = (tmp_path / "scored" / "predictions" / "Split-score" / "predictions.csv").read_text().splitlines()
    assert lines[0] == "key,prediction" and len(lines) == 6, lines
    assert all(float(line.rsplit(",", 1)[1]) == float(line.rsplit(",", 1)[1]) for line in lines[1:]), lines  # no NaN
