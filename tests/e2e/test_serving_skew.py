"""Issue 53 skew: `kflow predict` compares the data it scored with the data the model was trained on (real runs).

A model trained on span-1-like survey data scores two unlabelled files: one drawn like the training data (no
feature skewed) and one shifted in `age` (numeric) and `color` (categorical), whose skew.json names both with
their distances, as does the command's output.
"""

from __future__ import annotations

import csv
import json

import pytest

from tests.e2e.test_spans_pipeline import write_span

CONFIG = """\
name: survey
pipeline_root: {root}/runs
data:
  dataset: csv
  source: {{path: data/survey-1.csv}}
  label: label
  problem_type: classification
trainer:
  model: tabular_mlp
  epochs: 2
  batch_size: 32
"""


def unlabelled(folder, span, shifted):
    """Span `span`'s rows without the label column, as new data to score."""
    write_span(folder, span, shifted=shifted)
    rows = list(csv.reader(open(folder / f"survey-{span}.csv")))
    path = folder / f"new-{span}.csv"
    with open(path, "w", newline="") as file:
        csv.writer(file).writerows(row[:3] for row in rows)
    return path


@pytest.mark.slow  # a kflow run and two kflow predicts (~40 s); make test: the comparators (test_drift.py)
def test_predict_reports_the_skew_of_the_scored_data(tmp_path, run_kflow):
    config = tmp_path / "survey.yaml"
    config.write_text(CONFIG.format(root=tmp_path))
    write_span(tmp_path / "data", 1)
    trained = run_kflow("run", config)
    assert trained.returncode == 0, trained.stderr[-3000:]

    alike = run_kflow("predict", config, "--data", unlabelled(tmp_path / "new", 2, False), "-o", tmp_path / "alike")
    assert alike.returncode == 0, alike.stderr[-3000:]
    skew = json.loads((tmp_path / "alike" / "skew.json").read_text())
    assert skew["compared"] and skew["skewed"] == []
    assert {entry["feature"] for entry in skew["features"]} == {"age", "color", "income"}  # no label to compare
    assert "skew from" not in alike.stdout

    shifted = run_kflow("predict", config, "--data", unlabelled(tmp_path / "new", 3, True), "-o", tmp_path / "shifted")
    assert shifted.returncode == 0, shifted.stderr[-3000:]
    skew = json.loads((tmp_path / "shifted" / "skew.json").read_text())
    assert skew["skewed"] == ["age", "color"]
    distances = {entry["feature"]: entry["distance"] for entry in skew["features"]}
    assert distances["age"] > 0.3 and distances["color"] > 0.3 and distances["income"] < 0.1
    assert f"age: Jensen-Shannon divergence {distances['age']:.3f}" in shifted.stdout
    predicted = json.loads((tmp_path / "shifted" / "predict.json").read_text())
    assert predicted["skew"]["skewed"] == ["age", "color"]
    assert (tmp_path / "shifted" / "statistics" / "Split-score" / "FeatureStats.pb").is_file()

    # A column the scored file holds with no value in any row (a user trial: two features said nothing of): skewed,
    # with no distance to give, where before it was left out of the comparison ("no skew").
    rows = list(csv.reader(open(tmp_path / "new" / "new-2.csv")))
    income = rows[0].index("income")
    with open(tmp_path / "new" / "no-income.csv", "w", newline="") as file:
        csv.writer(file).writerows([rows[0], *([*row[:income], "", *row[income + 1 :]] for row in rows[1:])])
    empty = run_kflow("predict", config, "--data", tmp_path / "new" / "no-income.csv", "-o", tmp_path / "empty")
    assert empty.returncode == 0, empty.stderr[-3000:]
    skew = json.loads((tmp_path / "empty" / "skew.json").read_text())
    assert skew["empty"] == ["income"] and "income" in skew["skewed"]
    assert "income" not in {entry["feature"] for entry in skew["features"]}
    assert "income: no value in any scored row" in empty.stdout

    # Colours the training data never held (a user trial: 5 of 30 rows with region 'ZZ' were scored without a word,
    # the skew line naming another value): said with their rows, in skew.json and the output.
    color = rows[0].index("color")
    new_rows = [[*row[:color], "purple" if at % 4 == 0 else row[color], *row[color + 1 :]]
                for at, row in enumerate(rows[1:])]  # fmt: skip
    with open(tmp_path / "new" / "purple.csv", "w", newline="") as file:
        csv.writer(file).writerows([rows[0], *new_rows])
    unseen = run_kflow("predict", config, "--data", tmp_path / "new" / "purple.csv", "-o", tmp_path / "unseen")
    assert unseen.returncode == 0, unseen.stderr[-3000:]
    purple = sum(1 for row in new_rows if row[color] == "purple")
    assert json.loads((tmp_path / "unseen" / "skew.json").read_text())["unseen"] == {"color": {"purple": purple}}
    assert f"values not seen in training (each read as an unknown one): color: 'purple' ({purple} rows)" in (
        unseen.stdout
    )


def test_unseen_values_are_only_those_of_a_complete_training_list():
    """A truncated list of the training's most frequent values says nothing of the rest: no value is called unseen
    then; numbers are never."""
    from tensorflow_metadata.proto.v0 import statistics_pb2

    from kflow.pipeline.app.serving_skew import describe_unseen, unseen_values

    def feature(values, complete=True):
        stats = statistics_pb2.FeatureNameStatistics()
        stats.string_stats.unique = len(values)
        stats.string_stats.rank_histogram.name = "all values" if complete else "truncated"
        for rank, (value, count) in enumerate(values.items()):
            stats.string_stats.rank_histogram.buckets.add(low_rank=rank, high_rank=rank, label=value,
                                                          sample_count=count)  # fmt: skip
        return stats

    number = statistics_pb2.FeatureNameStatistics()
    number.num_stats.mean = 1.0
    listed = feature({"a": 9, "b": 2})  # the first 2 of 3 training values: rank_histogram's first RANK_BUCKETS
    listed.string_stats.unique = 3
    trained = {"city": feature({"paris": 9, "lyon": 4}), "tag": feature({"a": 9}, complete=False), "n": number,
               "code": listed}  # fmt: skip
    scored = {"city": feature({"paris": 3, "rome": 2, "nice": 1}), "tag": feature({"b": 5}), "n": number,
              "code": feature({"c": 1})}  # fmt: skip
    found = unseen_values(scored, trained, set())
    assert found == {"city": {"rome": 2, "nice": 1}}
    assert describe_unseen(found) == "city: 'rome' (2 rows), 'nice' (1 row)"
    long = "a binder of 1,272 patients' records was stolen from a car"  # a free text's value: a line shows its start
    assert describe_unseen({"text": {long: 1}}) == """text: "a binder of 1,272 patients' records was…" (1 row)"""
    assert unseen_values(scored, trained, {"city"}) == {}
