"""The evaluator executor, called directly with a hand-built deterministic model."""

from __future__ import annotations

import os
import shutil
import time

import keras
import numpy as np
import pytest

from kflow.components.evaluator.executor import SERVING_REPORT, run
from kflow.pipeline.dsl.artifacts import Model, ModelBlessing, ModelEvaluation
from tests.components.fixtures import read_split


def bar_detector() -> keras.Model:
    """A fixed linear model that scores class k by the brightness of rows 2k+2..2k+4.

    Class 3 carries a negative bias, so it is often mistaken and per-class accuracy varies.
    """
    inputs = keras.Input(shape=(28, 28), dtype="uint8")
    x = keras.layers.Rescaling(1.0 / 255)(inputs)
    x = keras.layers.Flatten()(x)
    dense = keras.layers.Dense(10, activation="softmax")
    outputs = dense(x)
    kernel = np.zeros((28, 28, 10), dtype=np.float32)
    for label in range(10):
        kernel[2 * label + 2 : 2 * label + 5, :, label] = 0.05
    bias = np.zeros(10, dtype=np.float32)
    bias[3] = -2.5
    dense.set_weights([kernel.reshape(784, 10), bias])
    return keras.Model(inputs, outputs)


@pytest.fixture(scope="module")
def inputs(bar_detector_inputs):
    return bar_detector_inputs


def evaluate(inputs, tmp_path, **parameters):
    examples, schema, model = inputs
    evaluation, blessing = ModelEvaluation(tmp_path / "evaluation"), ModelBlessing(tmp_path / "blessing")
    summary = run(examples=examples, schema=schema, model=model, evaluation=evaluation, blessing=blessing, **parameters)
    return summary, evaluation, blessing


def test_metrics_match_a_numpy_computation(inputs, tmp_path):
    summary, evaluation, blessing = evaluate(inputs, tmp_path, batch_size=64)

    examples, _, model = inputs
    images, labels = read_split(examples, "test")
    probabilities = keras.models.load_model(model.keras_file).predict(images, verbose=0).astype(np.float64)
    picked = np.clip(probabilities[np.arange(len(labels)), labels], 1e-7, 1 - 1e-7)
    hits = probabilities.argmax(axis=1) == labels
    metrics = evaluation.metrics

    assert metrics["split"] == "test" and metrics["dataset"] == "mnist" and "task" not in metrics  # one name a concept
    assert metrics["example_count"] == 300
    assert metrics["accuracy"] == pytest.approx(hits.mean(), abs=1e-5)
    assert metrics["loss"] == pytest.approx(-np.log(picked).mean(), abs=1e-5)
    for label in range(10):
        of_label = labels == label
        assert metrics["per_class_count"][str(label)] == of_label.sum()
        assert metrics["per_class_accuracy"][str(label)] == pytest.approx(hits[of_label].mean(), abs=1e-5)
    # The model is good but not perfect, so the numbers above are not trivial.
    assert 0.5 < metrics["accuracy"] < 1.0
    assert metrics["per_class_accuracy"]["3"] < metrics["per_class_accuracy"]["0"]

    assert summary == {
        "accuracy": metrics["accuracy"],
        "loss": metrics["loss"],
        "blessed": True,
        "headline": "accuracy",
        "no_baseline": "none was given",
    }
    assert blessing.blessed
    # No thresholds: the one check is that the serving SavedModel predicts what model.keras does.
    (check,) = blessing.read_json("blessing.json")["checks"]
    assert check["metric"] == "serving_predictions" and check["passed"] and check["value"] <= check["threshold"]
    serving = evaluation.read_json("serving_check.json")
    assert serving["examples"] == 256 and serving["signature"] == "serving_default"


def test_a_serving_model_that_predicts_otherwise_is_not_blessed(inputs, tmp_path):
    """The Pusher ships Format-Serving: an export that lost what model.keras has (here its trained weights) is
    refused, though model.keras scores well."""
    examples, schema, model = inputs
    broken = Model(tmp_path / "broken")
    shutil.copytree(model.path, broken.path)
    shutil.rmtree(broken.serving_uri)
    untrained = bar_detector()
    untrained.layers[-1].set_weights([np.zeros((784, 10), np.float32), np.zeros(10, np.float32)])
    untrained.export(str(broken.serving_uri), format="tf_saved_model", verbose=False)
    summary, evaluation, blessing = evaluate((examples, schema, broken), tmp_path)
    assert not blessing.blessed and summary["failed_checks"][0].startswith("serving_predictions")
    assert evaluation.read_json("serving_check.json")["max_abs_difference"] > 0.01
    shutil.rmtree(broken.serving_uri)  # and one with no serving model at all
    summary, evaluation, blessing = evaluate((examples, schema, broken), tmp_path / "none")
    assert not blessing.blessed and "no serving SavedModel" in evaluation.read_json("serving_check.json")["reason"]


@pytest.mark.slow  # make test keeps a failing bound (below) and the demo's blessing (tests/e2e)
def test_thresholds_that_hold_bless_the_model(inputs, tmp_path):
    thresholds = {"accuracy": {"lower_bound": 0.5}, "loss": {"upper_bound": 5.0}, "example_count": {"lower_bound": 1}}
    summary, evaluation, blessing = evaluate(inputs, tmp_path, thresholds=thresholds)
    assert summary["blessed"]
    assert blessing.blessed
    assert (blessing.path / "BLESSED").exists()
    checks = blessing.read_json("blessing.json")["checks"]
    assert {(check["metric"], check["bound"]) for check in checks} == {
        ("accuracy", "lower_bound"), ("loss", "upper_bound"), ("example_count", "lower_bound"),
        ("serving_predictions", "upper_bound"),
    }  # fmt: skip
    assert all(check["passed"] for check in checks)


def test_a_failing_lower_bound_withholds_the_blessing(inputs, tmp_path):
    thresholds = {"accuracy": {"lower_bound": 0.999}, "loss": {"upper_bound": 5.0}}
    summary, evaluation, blessing = evaluate(inputs, tmp_path, thresholds=thresholds)
    assert not summary["blessed"]
    assert not blessing.blessed
    assert (blessing.path / "NOT_BLESSED").exists()
    verdict = blessing.read_json("blessing.json")
    assert verdict["blessed"] is False
    failed = [check for check in verdict["checks"] if not check["passed"]]
    assert failed == [
        {
            "metric": "accuracy",
            "value": evaluation.metrics["accuracy"],
            "bound": "lower_bound",
            "threshold": 0.999,
            "passed": False,
        }
    ]


@pytest.mark.parametrize(
    ("thresholds", "message"),
    [
        ({"auc": {"lower_bound": 0.9}}, "unknown metric 'auc'"),
        ({"accuracy": {"lower": 0.9}}, "unknown bound 'lower'"),
        ({"accuracy": {}}, "non-empty"),
        ({"accuracy": {"lower_bound": "high"}}, "must be a number"),
    ],
)
def test_malformed_thresholds_are_refused(inputs, tmp_path, thresholds, message):
    with pytest.raises(ValueError, match=message):
        evaluate(inputs, tmp_path, thresholds=thresholds)
    assert not (tmp_path / "blessing").exists()


def test_a_missing_split_is_named(inputs, tmp_path):
    with pytest.raises(ValueError, match="no split 'eval'"):
        evaluate(inputs, tmp_path, split="eval")


def test_the_serving_client_is_stopped_when_the_evaluation_fails_before_it_answers(inputs):
    """The client starts with the Evaluator, before its inputs exist: an evaluation that fails on the way leaves
    no client process and no scratch folder behind."""
    from kflow.components.evaluator.serving_check import ServingClient

    _, _, model = inputs
    with pytest.raises(RuntimeError, match="the evaluation failed"), ServingClient(model) as client:
        assert client.process is not None and client.process.poll() is None  # Loading the SavedModel.
        raise RuntimeError("the evaluation failed")
    assert client.process.returncode is not None and not client.scratch.exists()


def wait_for_priority(pid: int, niceness: int, timeout: float = 60) -> int:
    deadline = time.monotonic() + timeout
    while (current := os.getpriority(os.PRIO_PROCESS, pid)) != niceness and time.monotonic() < deadline:
        time.sleep(0.05)
    return current


def test_the_check_takes_the_client_warmed_up_for_it(inputs, tmp_path):
    """A local run warms the Evaluator up (serving_check.warm_up): its client loads TensorFlow at the lowest
    priority, then the check takes it, and it answers and is kept for the process's next check, until its end."""
    from kflow.components.evaluator import serving_check

    with serving_check.warm_up({}):
        (warm,) = serving_check._WARM
        assert wait_for_priority(warm.popen.pid, 19) == 19
        _, evaluation, blessing = evaluate(inputs, tmp_path)
        assert serving_check._WARM == [] and serving_check._SPARE == [warm] and warm.popen.poll() is None
    serving_check.stop_spares()  # as the process's end does
    assert warm.popen.returncode is not None and not warm.scratch.exists() and serving_check._SPARE == []
    report = evaluation.read_json(SERVING_REPORT)
    assert report["passed"] and report["examples"] == 256
    assert blessing.blessed


@pytest.mark.skipif(os.geteuid() != 0, reason="only root may raise a process's priority again")
def test_a_warm_client_told_its_model_is_back_at_the_usual_priority(inputs):
    from kflow.components.evaluator.serving_check import ClientProcess

    _, _, model = inputs
    client = ClientProcess(idle=True)
    try:
        assert wait_for_priority(client.popen.pid, 19) == 19
        assert client.load(model.serving_uri)
        assert wait_for_priority(client.popen.pid, 0) == 0
    finally:
        client.stop()


def test_a_warm_client_nothing_took_is_stopped_with_the_run():
    from kflow.components.evaluator import serving_check

    with serving_check.warm_up({}):
        (warm,) = serving_check._WARM
        assert warm.popen.poll() is None
    assert warm.popen.returncode is not None and not warm.scratch.exists() and serving_check._WARM == []


def test_a_warm_client_started_with_other_variables_is_replaced(inputs, tmp_path, monkeypatch, caplog):
    from kflow.components.evaluator import serving_check

    monkeypatch.setenv("KFLOW_TEST_VARIABLE", "warm")
    with serving_check.warm_up({}):
        (warm,) = serving_check._WARM
        monkeypatch.setenv("KFLOW_TEST_VARIABLE", "changed")
        with caplog.at_level("INFO", logger="kflow.evaluator"):
            _, evaluation, _ = evaluate(inputs, tmp_path)
        assert warm.popen.returncode == -9 and not warm.scratch.exists()  # stopped, not asked
    assert "the serving check's warm client is not used (KFLOW_TEST_VARIABLE changed)" in caplog.text
    assert evaluation.read_json(SERVING_REPORT)["passed"]
