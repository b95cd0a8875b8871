"""The tabular task, model and metrics: preprocessing from the training split, raw values in, metrics that
agree with scikit-learn's, and a real regression (scikit-learn's diabetes data) through the executors."""

from __future__ import annotations

import json

import keras
import numpy as np
import pytest
import tensorflow as tf
from sklearn import metrics as sk

from kflow.components.datasets.csv.ingest.executor import run as ingest
from kflow.components.datasets.tabular.metrics import TabularMetrics
from kflow.components.datasets.tabular.task import PREPROCESSING_FILE, TabularTask
from kflow.components.evaluator.executor import run as evaluate
from kflow.components.trainer.executor import run as train
from kflow.components.util.schema import load_schema
from kflow.pipeline.dsl.artifacts import Examples, Model, ModelBlessing, ModelEvaluation, ModelRun, Rejects, Schema
from tests.components.datasets.tabular_fixtures import write_diabetes

WORDS = ["crisp", "sweet", "sour", "soft", "juicy", "green", "bitter", "fresh", "ripe", "old"]


def fruit_rows(count=120):
    rng = np.random.default_rng(0)
    rows = []
    for i in range(count):
        label = ["apple", "pear", "plum"][i % 3]
        weight = "" if i % 10 == 0 else f"{100 + 40 * (i % 3) + rng.normal(0, 5):.1f}"
        words = " ".join(rng.choice(WORDS, 4)) + f" number {i}"  # Distinct long strings: a text feature.
        colour = ["red", "green", "purple"][i % 3] if i % 7 else "blue"
        rows.append(f"{i},{colour},{weight},{'yes' if i % 2 else 'no'},{words},{label}")
    return rows


@pytest.fixture(scope="module")
def fruit(tmp_path_factory):
    root = tmp_path_factory.mktemp("fruit")
    source = root / "fruit.csv"
    source.write_text("\n".join(["id,colour,weight,organic,notes,label", *fruit_rows()]) + "\n")
    examples, schema = Examples(root / "examples"), Schema(root / "schema")
    ingest(examples=examples, schema=schema, rejects=Rejects(root / "rejects"), source_path=str(source), label="label",
           key="id")  # fmt: skip
    task = TabularTask(load_schema(schema.file), model_options={"max_categories": 5, "hidden_units": [8]})
    figures = task.prepare(examples, root / "assets")
    return examples, schema, task, figures, root


def test_preprocessing_is_learnt_from_the_training_split_only(fruit):
    examples, _, task, figures, root = fruit
    prepared = json.loads((root / "assets" / PREPROCESSING_FILE).read_text())
    kinds = {spec["name"]: spec["kind"] for spec in prepared["features"]}
    assert kinds == {"colour": "categorical", "weight": "numeric", "organic": "numeric", "notes": "text"}  # not id
    weights = [
        x["weight"].ravel() for x, _ in task.dataset(examples, "train", batch_size=64, training=False, seed=0)
        .as_numpy_iterator()
    ]  # fmt: skip
    weights = np.concatenate(weights)
    present = weights[~np.isnan(weights)]
    assert 0 < np.isnan(weights).sum() < len(weights)  # Missing weights arrive as NaN ...
    weight = next(spec for spec in prepared["features"] if spec["name"] == "weight")
    assert weight["mean"] == pytest.approx(present.mean(), rel=1e-5)  # ... and do not count in the mean.
    assert weight["variance"] == pytest.approx(present.var(), rel=1e-4)
    colour = next(spec for spec in prepared["features"] if spec["name"] == "colour")
    assert colour["vocabulary"][:3] == sorted(colour["vocabulary"][:3], key=lambda c: c)  # Tied counts: by name.
    assert set(colour["vocabulary"]) == {"red", "green", "purple", "blue"}
    assert prepared["head"]["classes"] == ["apple", "pear", "plum"]
    assert figures["train_examples"] == examples.stats["accepted"]["train"]


def test_the_model_takes_raw_values_and_survives_saving(fruit, tmp_path):
    examples, _, task, _, _ = fruit
    x, y = next(task.dataset(examples, "eval", batch_size=8, training=False, seed=0).as_numpy_iterator())
    assert set(np.unique(y)) <= {0, 1, 2}
    model = task.build_model()
    before = model.predict_on_batch(x)
    assert before.shape == (len(y), 3) and np.allclose(before.sum(axis=1), 1, atol=1e-5)
    model.save(tmp_path / "model.keras")
    after = keras.models.load_model(tmp_path / "model.keras").predict_on_batch(x)
    np.testing.assert_allclose(after, before, rtol=1e-5)

    model.export(str(tmp_path / "serving"), format="tf_saved_model", verbose=False)
    serve = tf.saved_model.load(str(tmp_path / "serving")).signatures["serving_default"]
    raw = {
        "colour": tf.constant([["red"], ["never seen"]]),
        "weight": tf.constant([[120.0], [np.nan]]),  # A missing number: NaN.
        "organic": tf.constant([[1.0], [0.0]]),
        "notes": tf.constant([["crisp sweet"], [""]]),
    }
    (probabilities,) = serve(**raw).values()
    assert probabilities.shape == (2, 3) and not np.isnan(probabilities.numpy()).any()


def test_classification_metrics_agree_with_scikit_learn():
    rng = np.random.default_rng(1)
    labels = rng.integers(0, 3, 200)
    probabilities = rng.dirichlet(np.ones(3), 200)
    metrics = TabularMetrics(kind="classification", classes=["a", "b", "c"])
    metrics.update(None, labels[:120], probabilities[:120])
    metrics.update(None, labels[120:], probabilities[120:])
    result = metrics.result()
    predicted = probabilities.argmax(axis=1)
    assert result["accuracy"] == pytest.approx(sk.accuracy_score(labels, predicted))
    assert result["macro_f1"] == pytest.approx(sk.f1_score(labels, predicted, average="macro"))
    assert result["macro_recall"] == pytest.approx(sk.recall_score(labels, predicted, average="macro"))
    assert result["loss"] == pytest.approx(sk.log_loss(labels, probabilities), rel=1e-6)
    assert result["confusion_matrix"]["matrix"] == sk.confusion_matrix(labels, predicted).tolist()
    assert "roc_auc" not in result  # Only for two classes.

    # A slice of one class (by the label): precision there is 1 whatever the model does; said as None, not 1.0.
    one = TabularMetrics(kind="classification", classes=["a", "b", "c"])
    one.update(None, labels[labels == 1], probabilities[labels == 1])
    sliced = one.result()
    assert sliced["macro_precision"] is None and sliced["macro_f1"] is None
    assert (
        sliced["macro_recall"]
        == pytest.approx(sliced["accuracy"])
        == pytest.approx(np.mean(predicted[labels == 1] == 1))
    )

    binary = TabularMetrics(kind="classification", classes=["no", "yes"])
    two = np.stack([1 - probabilities[:, 0], probabilities[:, 0]], axis=1)
    binary.update(None, labels % 2, two)
    assert binary.result()["roc_auc"] == pytest.approx(sk.roc_auc_score(labels % 2, two[:, 1]))
    assert binary.result()["pr_auc"] == pytest.approx(sk.average_precision_score(labels % 2, two[:, 1]))


def test_regression_metrics_agree_with_scikit_learn():
    rng = np.random.default_rng(2)
    actual = rng.normal(50, 10, 300)
    predicted = actual + rng.normal(0, 4, 300)
    metrics = TabularMetrics(kind="regression")
    metrics.update(None, actual[:, None], predicted[:, None])
    result = metrics.result()
    assert result["r2"] == pytest.approx(sk.r2_score(actual, predicted))
    assert result["mae"] == pytest.approx(sk.mean_absolute_error(actual, predicted))
    assert result["rmse"] == pytest.approx(np.sqrt(sk.mean_squared_error(actual, predicted)))
    assert metrics.HEADLINE == "rmse"


def test_slices_by_a_string_an_integer_code_and_a_bucketed_number():
    metrics = TabularMetrics(kind="classification", classes=["a", "b"])
    x = {
        "colour": np.array([[b"red"], [b""], [b"blue"]], dtype=object),
        "size": np.array([[1.0], [2.0], [np.nan]]),
        "weight": np.array([[0.5], [1.5], [2.5]]),
    }
    y = np.array([0, 1, 1])
    assert list(metrics.slice_keys("colour", x, y, [])) == ["colour=red", "colour=missing", "colour=blue"]
    assert list(metrics.slice_keys("size", x, y, [])) == ["size=1", "size=2", "size=missing"]
    assert list(metrics.slice_keys("weight", x, y, [1, 2])) == ["weight <1", "weight [1,2)", "weight >=2"]
    assert list(metrics.slice_keys("label", x, y, [])) == ["label=a", "label=b", "label=b"]
    with pytest.raises(ValueError, match="needs boundaries"):
        metrics.slice_keys("weight", x, y, [])
    with pytest.raises(ValueError, match="no such feature"):
        metrics.slice_keys("flavour", x, y, [])


@pytest.mark.slow  # ~30 s; make test keeps regression's metrics and the csv e2e
def test_real_regression_diabetes_through_ingest_trainer_and_evaluator(tmp_path):
    """scikit-learn's diabetes data (442 patients): the trained model explains part of the variance."""
    source = write_diabetes(tmp_path / "diabetes.csv")
    examples, schema = Examples(tmp_path / "examples"), Schema(tmp_path / "schema")
    summary = ingest(examples=examples, schema=schema, rejects=Rejects(tmp_path / "rejects"), source_path=str(source),
                     label="progression", problem_type="regression")  # fmt: skip
    assert summary["read"] == 442 and summary["rejected"] == 0
    model, model_run = Model(tmp_path / "model"), ModelRun(tmp_path / "run")
    train(examples=examples, schema=schema, model=model, model_run=model_run, dataset="csv", model_name="tabular_mlp",
          epochs=30, batch_size=32, learning_rate=0.005, seed=3)  # fmt: skip
    evaluation, blessing = ModelEvaluation(tmp_path / "evaluation"), ModelBlessing(tmp_path / "blessing")
    result = evaluate(examples=examples, schema=schema, model=model, evaluation=evaluation, blessing=blessing,
                      thresholds={"r2": {"lower_bound": 0.2}}, slices=[{"by": "sex"}])  # fmt: skip
    metrics = evaluation.metrics
    assert metrics["example_count"] == summary["test"]
    assert metrics["r2"] > 0.2, metrics  # A constant (the mean) scores 0.
    assert result["blessed"] and result["headline"] == "rmse"
    assert set(metrics["slices"]["sex"]) == {"sex=1", "sex=2"}
    assert (evaluation.path / "predicted_vs_actual.png").exists()


def test_a_schema_without_its_label_says_how_a_declared_pipeline_gives_one():
    """A declared DAG's schema_gen wired with statistics alone infers no label (a user trial's transform failed
    after ingest and statistics): the line says which input carries it."""
    from tensorflow_metadata.proto.v0 import schema_pb2

    schema = schema_pb2.Schema()
    schema.feature.add(name="alcohol", type=schema_pb2.FLOAT)
    with pytest.raises(ValueError, match=r"inputs: \{statistics: …, ingest_schema: ingest.schema\}"):
        TabularTask(schema)
