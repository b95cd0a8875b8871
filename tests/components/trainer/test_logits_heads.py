"""A model that ends in logits and a loss that takes them (`from_logits=True`), as tensorflow.org's quickstart for
beginners writes its MNIST model (`Dense(10)`, `SparseCategoricalCrossentropy(from_logits=True)` in `compile`).
kflow refused every head without an activation (the Evaluator, serving and the task's metrics read probabilities),
and ignored a compiled loss; it now ends such a model in the probabilities its logits stand for (a softmax over
several units, a sigmoid over one) and trains it on the same loss taking those. A head of logits with a loss that
does not take them is still refused (test_user_model.py). Real data: MNIST (../shared/datasets), scikit-learn's
breast cancer table, iris."""

from __future__ import annotations

import numpy as np
import pytest

from kflow.components.datasets.task import task_for_model
from kflow.components.models import load_trained
from kflow.pipeline.dsl.artifacts import Model
from tests.components.datasets.tabular_fixtures import write_iris
from tests.components.trainer.test_user_model_kinds import mnist_sample, trained_and_evaluated
from tests.components.trainer.user_models import csv_examples, write_cancer

# tensorflow.org/tutorials/quickstart/beginner, its model and compile as written there; the tutorial's
# `x_train / 255.0` on the arrays is the Rescaling layer.
QUICKSTART = """\
import tensorflow as tf


def build_model(schema, options):
    model = tf.keras.models.Sequential([
        tf.keras.Input(shape=(28, 28)),
        tf.keras.layers.Rescaling(1 / 255.0),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(128, activation="relu"),
        tf.keras.layers.Dropout(0.2),
        tf.keras.layers.Dense(10),
    ])
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    model.compile(optimizer="adam", loss=loss_fn, metrics=["accuracy"])
    return model
"""

# A table's model of logits: `UNITS` of them, its loss in the module's loss() (iris) or in compile (cancer).
TABLE_LOGITS = """\
import keras


def build_model(schema, options):
    inputs = {f["name"]: keras.Input(shape=(1,), name=f["name"]) for f in options["features"]}
    x = keras.layers.Concatenate()([
        keras.layers.Normalization(mean=f["mean"], variance=f["variance"])(inputs[f["name"]])
        for f in options["features"]
    ])
    model = keras.Model(inputs, keras.layers.Dense(UNITS)(keras.layers.Dense(16, activation="relu")(x)))
    COMPILE
    return model
EXTRA"""


@pytest.mark.real_data
@pytest.mark.slow  # ~7 s; make test trains a table's logits below
def test_tensorflow_orgs_quickstart_trains_on_its_logits_and_serves_probabilities(tmp_path):
    examples, schema = mnist_sample(tmp_path)
    metrics = trained_and_evaluated(tmp_path, examples, schema, "mnist", QUICKSTART, epochs=3, batch_size=64)
    assert metrics["accuracy"] > 0.8, metrics  # 0.85 after 3 epochs of 2,400 images; chance 0.1
    _assert_probabilities(tmp_path, examples, classes=10)


# The breast cancer table (12-20 s) in make test-all only; make test keeps the MNIST quickstart's and iris' logits.
COMPILED_BINARY = 'model.compile(loss=keras.losses.BinaryCrossentropy(from_logits=True), optimizer="adam")'


@pytest.mark.parametrize(
    ("table", "units", "compile_line", "extra", "least"),
    [("iris", 3, "", "\n\ndef loss():\n    return keras.losses.SparseCategoricalCrossentropy(from_logits=True)\n", 0.8),
     pytest.param("cancer", 1, COMPILED_BINARY, "", 0.9, marks=pytest.mark.slow)],
    ids=["iris_loss_function", "cancer_compiled_binary"],
)  # fmt: skip
def test_a_tables_logits_train_with_their_loss_and_the_model_gives_probabilities(
    tmp_path, table, units, compile_line, extra, least
):
    write = {"iris": write_iris, "cancer": write_cancer}[table]
    label = {"iris": "species", "cancer": "diagnosis"}[table]
    examples, schema = csv_examples(tmp_path, write(tmp_path / f"{table}.csv"), label)
    source = TABLE_LOGITS.replace("UNITS", str(units)).replace("COMPILE", compile_line).replace("EXTRA", extra)
    metrics = trained_and_evaluated(tmp_path, examples, schema, "csv", source, epochs=20, batch_size=16,
                                    learning_rate=0.01)  # fmt: skip
    assert metrics["accuracy"] > least, metrics
    _assert_probabilities(tmp_path, examples, classes=3 if table == "iris" else 2)


def _assert_probabilities(tmp_path, examples, classes):
    """The saved model gives each row its classes' probabilities: non-negative, summing to 1."""
    model = Model(tmp_path / "model")
    task = task_for_model(model, model.training_schema_file)
    x, _ = next(task.dataset(examples, "test", batch_size=32, training=False, seed=0).as_numpy_iterator())[:2]
    scores = load_trained(model.keras_file, task.model_name).predict_on_batch(x)
    assert scores.shape[1] == classes and (scores >= 0).all(), scores
    np.testing.assert_allclose(scores.sum(axis=1), 1.0, atol=1e-5)
