"""Issue 53: three spans of a survey arrive one after another (real kflow runs of a small generated CSV).

Span 2 is drawn like span 1: its run ingests only span 2 (span 1's ingest is cached), warm-starts from run 1's
blessed model and is evaluated against it. Span 3 is shifted in `age` (numeric) and `color` (categorical): its
drift from span 2 is reported naming both with their distances, and `on_drift: fail` stops the run before
training. `kflow plan` before each run says what will run and why; `kflow diff` of runs 1 and 2 says that
their test data differ.
"""

from __future__ import annotations

import csv
import json
import random

import pytest

CONFIG = """\
name: survey
pipeline_root: {root}/runs
data:
  dataset: csv
  source: {{path: "data/survey-{{SPAN}}.csv"}}
  label: label
  problem_type: classification
  spans: all
  on_drift: fail
trainer:
  model: tabular_mlp
  epochs: 3
  batch_size: 32
  warm_start: latest_blessed
evaluator:
  baseline: latest_blessed
"""


def write_span(folder, span, shifted=False, rows=300):
    """Age ~ N(40, 8) and colours red/green/blue 5:3:2; shifted: age ~ N(65, 8) and colours 1:1:8."""
    rng = random.Random(span)
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / f"survey-{span}.csv", "w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(["age", "income", "color", "label"])
        for _ in range(rows):
            age = rng.gauss(65 if shifted else 40, 8)
            income = rng.gauss(50, 10)
            color = rng.choices(["red", "green", "blue"], weights=[1, 1, 8] if shifted else [5, 3, 2])[0]
            score = income + (age - 40) * 0.5 + (5 if color == "red" else 0) + rng.gauss(0, 3)
            writer.writerow([round(age, 1), round(income, 2), color, "yes" if score > 52 else "no"])


def plan_actions(run_kflow, config):
    shown = run_kflow("plan", config)
    assert shown.returncode == 0, shown.stderr
    rows = [line.split(None, 2) for line in shown.stdout.splitlines()[3:]]  # after the title, spans, header
    return {row[0]: (row[1], row[2] if len(row) > 2 else "") for row in rows}, shown.stdout


def newest_run(root):
    runs = sorted(
        (root / "runs" / "survey").glob("*/run.json"), key=lambda path: json.loads(path.read_text())["sequence"]
    )
    return json.loads(runs[-1].read_text()), runs[-1].parent


@pytest.mark.slow  # three kflow runs (~60 s on 2 busy cores); make test: tests/components/ingest/test_spans.py
def test_three_spans(tmp_path, run_kflow):
    config = tmp_path / "survey.yaml"
    config.write_text(CONFIG.format(root=tmp_path))
    data = tmp_path / "data"

    write_span(data, 1)
    actions, shown = plan_actions(run_kflow, config)
    assert actions["ingest_span_1"][0] == "run" and "spans: 1 (data.spans: all)" in shown
    first = run_kflow("run", config)
    assert first.returncode == 0, first.stderr[-3000:]
    record_1, run_1 = newest_run(tmp_path)
    assert record_1["components"]["ingest"]["summary"]["spans"] == "1"
    assert "warm_started_from" not in record_1["components"]["train"]["summary"]  # nothing blessed yet

    write_span(data, 2)
    actions, shown = plan_actions(run_kflow, config)
    assert actions["ingest_span_1"][0] == "cached"
    assert actions["ingest_span_2"] == ("run", f"new; span 2: {data / 'survey-2.csv'}")
    assert "spans: 1, 2 (data.spans: all)" in shown
    assert "inputs: ingest_span_2 (new)" in actions["ingest"][1]  # a span input is named by its ingest
    assert f"warm start from {run_1.name}" in actions["train"][1]
    second = run_kflow("run", config)
    assert second.returncode == 0, second.stderr[-3000:]
    record_2, run_2 = newest_run(tmp_path)
    components = record_2["components"]
    assert components["ingest_span_1"]["status"] == "cached"  # span 2 ingests only itself
    assert components["ingest_span_2"]["status"] == "succeeded"
    assert components["ingest"]["summary"]["spans"] == "1,2"
    examples = components["ingest"]["outputs"]["examples"]["uri"]
    assert json.loads((tmp_path / examples / "metadata.json").read_text()) == {"spans": ["1", "2"]}
    model_1 = record_1["components"]["train"]["outputs"]["model"]["uri"]
    assert components["train"]["summary"]["warm_started_from"] == model_1
    assert "warm-started from" in second.stderr
    assert components["evaluate"]["parameters"]["baseline_model_uri"] == model_1  # evaluated on the new test data
    drift = json.loads(
        (tmp_path / components["validate"]["outputs"]["anomalies"]["uri"] / "anomalies.json").read_text()
    )
    assert drift["drift"]["spans"] == ["2", "1"] and drift["drift"]["drifted"] == []

    listed = run_kflow("runs", tmp_path / "runs" / "survey")
    assert listed.returncode == 0 and listed.stdout.splitlines()[0].split()[-1] == "spans"
    assert listed.stdout.splitlines()[1].split()[-1] == "1,2"
    diff = run_kflow("diff", run_1, run_2)
    assert diff.returncode == 0, diff.stderr
    text = diff.stdout
    assert "test data: DIFFER" in text and "spans: 1 → 1, 2" in text and "test rows: 30 → 60" in text
    assert text.index("test data:") < text.index("metrics:")

    write_span(data, 3, shifted=True)
    actions, shown = plan_actions(run_kflow, config)
    assert actions["ingest_span_3"] == ("run", f"new; span 3: {data / 'survey-3.csv'}")
    assert "spans: 1, 2, 3 (data.spans: all); drift: span 3 against span 2" in shown
    assert actions["ingest_span_1"][0] == actions["ingest_span_2"][0] == "cached"
    third = run_kflow("run", config)
    assert third.returncode == 1
    error = third.stderr.strip().splitlines()[-1]
    # The label drifts too, and is said: the shifted ages score higher, so more rows are "yes" (a prior shift).
    assert "span 3 drifted from span 2 in 3 feature(s)" in error and "data.on_drift: warn" in error
    record_3, _ = newest_run(tmp_path)
    assert record_3["components"]["train"]["status"] == "failed"
    assert record_3["components"]["validate"]["summary"]["drift_blocking"] == 1  # said so, not "not blocking"
    assert "(drift, blocking: on_drift: fail)" in third.stderr and "(counted, not blocking)" not in third.stderr
    anomalies = tmp_path / record_3["components"]["validate"]["outputs"]["anomalies"]["uri"] / "anomalies.json"
    verdict = json.loads(anomalies.read_text())["drift"]
    assert verdict["drifted"] == ["age", "color", "label"] and verdict["blocking"]
    distances = {entry["feature"]: entry for entry in verdict["features"]}
    assert distances["age"]["comparator"] == "jensen_shannon" and distances["age"]["distance"] > 0.3
    assert distances["color"]["comparator"] == "l_infinity" and distances["color"]["distance"] > 0.3
    assert f"age: Jensen-Shannon divergence {distances['age']['distance']:.3f}" in error
    assert f"color: L-infinity distance {distances['color']['distance']:.3f}" in error
    assert not distances["income"]["drifted"]
