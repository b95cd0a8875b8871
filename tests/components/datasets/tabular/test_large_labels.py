"""A regression label of large numbers trains: its loss is taken on the label's standardised scale
(components/datasets/tabular/scaled_loss.py). In the label's units, Adam's second moment (the gradient squared) of
a label whose standard deviation passed ~3e9 overflowed float32 and every weight became NaN in the first epoch: a
user trial's dslabs gapminder `gdp` (dollars, std 7e11) failed with `the trained model's weight hidden_0/kernel holds
13056 NaN or infinite value(s) ... the learning rate?`. Here scikit-learn's diabetes progression, in units 1e10
times smaller: the model learns it as it learns the progression itself."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from kflow.components.datasets.csv.ingest.executor import run as ingest
from kflow.components.evaluator.executor import run as evaluate
from kflow.components.trainer.executor import run as train
from kflow.pipeline.dsl.artifacts import Examples, Model, ModelBlessing, ModelEvaluation, ModelRun, Rejects, Schema
from tests.components.datasets.tabular_fixtures import write_diabetes


def _r2(tmp_path, scale: float) -> float:
    tmp_path.mkdir()
    rows = list(csv.reader(write_diabetes(tmp_path / "raw.csv").open()))
    source = tmp_path / "diabetes.csv"
    with source.open("w", newline="") as file:
        written = [[str(number), *row[:-1], f"{float(row[-1]) * scale:.6g}"] for number, row in enumerate(rows[1:])]
        csv.writer(file).writerows([["patient", *rows[0]], *written])  # keyed: the same split whatever the label
    examples, schema = Examples(tmp_path / "examples"), Schema(tmp_path / "schema")
    ingest(examples=examples, schema=schema, rejects=Rejects(tmp_path / "rejects"), source_path=str(source),
           label="progression", problem_type="regression", key="patient")  # fmt: skip
    model = Model(tmp_path / "model")
    train(examples=examples, schema=schema, model=model, model_run=ModelRun(tmp_path / "run"), dataset="csv",
          model_name="tabular_mlp", epochs=10, batch_size=32, learning_rate=0.005, seed=3)  # fmt: skip
    evaluation = ModelEvaluation(tmp_path / "evaluation")
    evaluate(examples=examples, schema=schema, model=model, evaluation=evaluation,
             blessing=ModelBlessing(tmp_path / "blessing"))  # fmt: skip
    return evaluation.metrics["r2"]


@pytest.mark.slow  # ~19 s: two trainings; make test trains a regression in test_tabular.py
def test_a_label_of_large_numbers_trains_as_the_same_label_in_small_ones(tmp_path):
    large = _r2(tmp_path / "large", 1e10)  # a standard deviation of 7.7e11, gapminder's gdp's
    small = _r2(tmp_path / "small", 1.0)

    assert np.isfinite(large) and large > 0.2, large  # a constant (the mean) scores 0
    assert abs(large - small) < 0.02, (large, small)
