"""A user's own model module for the trainer.module tests, and the real tables they train on."""

from __future__ import annotations

import csv

from kflow.components.datasets.csv.ingest.executor import run as ingest
from kflow.pipeline.dsl.artifacts import Examples, Rejects, Schema
from tests.conftest import REPO

IRIS_CONFIG = REPO / "pipeline" / "configs" / "iris.yaml"

# A user's module on numeric features; HEAD is its output layer, LAYER one more layer before it.
MODULE = """\
import keras

SEEN = []


def build_model(schema, options):
    SEEN.append(options)
    inputs = {f["name"]: keras.Input(shape=(1,), name=f["name"], dtype="float32") for f in options["features"]}
    scaled = [
        keras.layers.Normalization(mean=f["mean"], variance=f["variance"])(inputs[f["name"]])
        for f in options["features"]
    ]
    x = keras.layers.Concatenate()(scaled)
    for units in options.get("hidden_units", [8]):
        x = keras.layers.Dense(units, activation="relu")(x)
    x = LAYER
    outputs = HEAD
    return keras.Model(inputs, outputs)
"""
SOFTMAX = 'keras.layers.Dense(len(options["head"]["classes"]), activation="softmax")(x)'


def module_source(head=SOFTMAX, layer="x", extra=""):
    return MODULE.replace("HEAD", head).replace("LAYER", layer) + extra


def csv_examples(root, source, label):
    examples, schema = Examples(root / "examples"), Schema(root / "schema")
    ingest(examples=examples, schema=schema, rejects=Rejects(root / "rejects"), source_path=str(source), label=label,
           problem_type="classification")  # fmt: skip
    return examples, schema


def write_cancer(path):
    """scikit-learn's breast cancer data (569 tumours, 30 measurements, malignant or benign) as a plain CSV."""
    from sklearn.datasets import load_breast_cancer

    data = load_breast_cancer()
    with path.open("w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow([*(name.replace(" ", "_") for name in data.feature_names), "diagnosis"])
        writer.writerows([*row, data.target_names[target]] for row, target in zip(data.data, data.target, strict=True))
    return path
