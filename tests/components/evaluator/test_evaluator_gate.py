"""The executor's slices, baseline comparison, plots, report and KFP metrics (MNIST, hand-built models)."""

from __future__ import annotations

import json
import logging

import numpy as np
import PIL.Image
import pytest

from kflow.components.evaluator.executor import run
from kflow.pipeline.dsl.artifacts import Model, ModelBlessing, ModelEvaluation, ModelRun
from tests.components.evaluator.test_evaluator_executor import bar_detector
from tests.components.fixtures import save_model, write_examples, write_schema


def save(model, folder) -> Model:
    artifact = Model(folder)
    save_model(model, artifact)
    artifact.write_task_spec("mnist", "mnist_convnet", {})
    return artifact


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    root = tmp_path_factory.mktemp("evaluator-gate")
    examples = write_examples(root / "examples", counts={"train": 20, "test": 300}, shards=2)
    good = save(bar_detector(), root / "good")
    worse = bar_detector()
    dense = worse.layers[-1]
    kernel, bias = dense.get_weights()
    bias[5] = -3.0  # Class 5 is now missed too: a regression against `good`.
    dense.set_weights([kernel, bias])
    model_run = ModelRun(root / "model_run")
    model_run.write_json(
        "history.json",
        {
            "epochs": 2,
            "per_epoch": [
                {"loss": 1.0, "val_loss": 1.2, "accuracy": 0.6},
                {"loss": 0.5, "val_loss": 0.7, "accuracy": 0.8},
            ],
        },
    )
    return examples, write_schema(root / "schema"), good, save(worse, root / "worse"), model_run


def evaluate(inputs, tmp_path, model, **parameters):
    examples, schema, _, _, model_run = inputs
    evaluation, blessing = ModelEvaluation(tmp_path / "evaluation"), ModelBlessing(tmp_path / "blessing")
    summary = run(
        examples=examples, schema=schema, model=model, model_run=model_run,
        evaluation=evaluation, blessing=blessing, **parameters,
    )  # fmt: skip
    return summary, evaluation, blessing


@pytest.fixture(scope="module")
def sliced(inputs, tmp_path_factory):
    """The good model evaluated with label slices and a report title (one evaluation, read by two tests)."""
    _, evaluation, _ = evaluate(
        inputs, tmp_path_factory.mktemp("sliced"), inputs[2], slices=[{"by": "label"}], report_title="digits"
    )
    return evaluation


def test_label_slices_count_and_score_each_class(sliced):
    evaluation = sliced
    metrics = evaluation.metrics
    by_label = metrics["slices"]["label"]
    assert sorted(by_label) == [f"label={k}" for k in range(10)]
    assert sum(entry["example_count"] for entry in by_label.values()) == 300
    for label in range(10):
        entry = by_label[f"label={label}"]
        assert entry["example_count"] == metrics["per_class_count"][str(label)]
        assert entry["accuracy"] == pytest.approx(metrics["per_class_accuracy"][str(label)])
    # Precision/recall per class and the confusion matrix agree with each other.
    matrix = np.array(metrics["confusion_matrix"]["matrix"])
    assert matrix.sum() == 300
    assert metrics["per_class_recall"]["3"] == pytest.approx(matrix[3, 3] / matrix[3].sum())
    assert metrics["per_class_precision"]["2"] == pytest.approx(matrix[2, 2] / matrix[:, 2].sum())
    # Class 3 carries a large negative bias: it is never predicted, so its precision is undefined.
    assert matrix[:, 3].sum() == 0 and metrics["per_class_precision"]["3"] is None
    assert metrics["per_class_precision"]["2"] < 1.0


def test_outputs_plots_report_and_kfp_metrics(sliced):
    evaluation = sliced
    for name in ("confusion_matrix.png", "per_class.png", "training_curves.png", "slices_label.png"):
        with PIL.Image.open(evaluation.path / name) as image:  # Drawn by the plotting library, not by hand.
            assert image.format == "PNG" and image.info["Software"].startswith("matplotlib")
    kfp = json.loads((evaluation.path / "kfp_metrics.json").read_text())
    assert kfp["scalars"]["accuracy"] == evaluation.metrics["accuracy"]
    assert kfp["confusion_matrix"]["categories"] == [str(k) for k in range(10)]
    assert kfp["confusion_matrix"]["matrix"] == evaluation.metrics["confusion_matrix"]["matrix"]
    report = (evaluation.path / "report.html").read_text()
    assert "BLESSED" in report and "label=7" in report
    assert "<title>digits evaluation: BLESSED</title>" in report and "<h1>digits: mnist model" in report
    # Self-contained: every plot embedded as SVG whose text is text, nothing fetched from beside the file.
    assert report.count("<svg role='img'") == 4 and ".png'" not in report and ".svg'" not in report
    assert "<text " in report
    metrics = evaluation.metrics
    for name, value in metrics.items():  # Every number of metrics.json is on the page, rounded for reading.
        if isinstance(value, float):
            shown = f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"
            assert f"<td>{name}</td><td>{shown}</td>" in report, name
    for label, recall in metrics["per_class_recall"].items():
        assert f"<td>{label}</td>" in report and f"{recall:.4g}" in report
    for row in metrics["confusion_matrix"]["matrix"]:
        assert "".join(f"<td>{count}</td>" for count in row) in report


def test_a_regression_against_the_baseline_withholds_the_blessing(inputs, tmp_path, caplog):
    _, _, good, worse, _ = inputs
    thresholds = {"accuracy": {"lower_bound": 0.3, "max_drop": 0.002}, "loss": {"max_rise": 10.0}}
    with caplog.at_level(logging.INFO):
        summary, evaluation, blessing = evaluate(
            inputs, tmp_path, worse, thresholds=thresholds, baseline_model_uri=str(good.path)
        )
    # The comparison is said in the log, threshold or not (a user trial found it in metrics.json only).
    metrics = evaluation.metrics
    said = f"accuracy {metrics['accuracy']:.4f}, the baseline's {metrics['baseline']['accuracy']:.4f}"
    assert f"evaluate: {said} on the same examples ({good.path})" in caplog.text
    assert not blessing.blessed and summary["blessed"] is False
    verdict = blessing.read_json("blessing.json")
    assert verdict["baseline_model"] == str(good.path)
    failed = [check for check in verdict["checks"] if not check["passed"]]
    assert [(check["metric"], check["bound"]) for check in failed] == [("accuracy", "max_drop")]
    baseline = evaluation.metrics["baseline"]
    assert failed[0]["baseline"] == baseline["accuracy"]
    assert failed[0]["change"] == pytest.approx(evaluation.metrics["accuracy"] - baseline["accuracy"])
    assert failed[0]["change"] < -0.002
    assert len(summary["failed_checks"]) == 1
    assert "accuracy change" in summary["failed_checks"][0] and "FAILED" in summary["failed_checks"][0]
    assert "accuracy change" in (evaluation.path / "report.html").read_text()


def test_no_regression_and_no_baseline_bless(inputs, tmp_path):
    _, _, good, _, _ = inputs
    thresholds = {"accuracy": {"max_drop": 0.0}}
    summary, _, blessing = evaluate(
        inputs, tmp_path / "same", good, thresholds=thresholds, baseline_model_uri=str(good.path)
    )
    assert summary["blessed"] and blessing.read_json("blessing.json")["checks"][0]["change"] == 0.0
    summary, _, blessing = evaluate(inputs, tmp_path / "first", good, thresholds=thresholds)
    check = blessing.read_json("blessing.json")["checks"][0]
    assert summary["blessed"] and check["baseline"] is None and "no baseline" in check["reason"]


@pytest.mark.slow  # ~25 s; make test keeps a blessing without a baseline (test_no_regression_and_no_baseline_bless).
def test_without_a_baseline_the_verdict_says_why_and_require_baseline_refuses(inputs, tmp_path):
    _, _, good, _, _ = inputs
    reason = "no earlier run of 'digits' blessed a model"
    summary, _, blessing = evaluate(inputs, tmp_path / "optional", good, no_baseline_reason=reason)
    assert summary["blessed"] and summary["no_baseline"] == reason
    assert blessing.record["no_baseline"] == reason and blessing.record["baseline_model"] is None
    summary, _, blessing = evaluate(
        inputs, tmp_path / "required", good, no_baseline_reason=reason, require_baseline=True
    )
    assert not blessing.blessed and summary["blessed"] is False
    (failed,) = blessing.failed_checks
    assert failed["metric"] == "baseline" and reason in failed["reason"]
    assert summary["failed_checks"] == [f"no baseline: {reason} (evaluator.require_baseline): FAILED"]
    # With a baseline, require_baseline holds.
    summary, _, _ = evaluate(inputs, tmp_path / "given", good, baseline_model_uri=str(good.path), require_baseline=True)
    assert summary["blessed"] and "no_baseline" not in summary


@pytest.mark.slow  # ~15 s; make test keeps the regression check against a baseline (above).
def test_a_baseline_whose_user_module_changed_since_its_blessing_is_not_run(inputs, tmp_path):
    """The blessing records the model's module digest; a later run runs that module only while it matches."""
    import shutil

    _, _, good, _, _ = inputs
    baseline = Model(tmp_path / "baseline")
    shutil.copytree(good.path, baseline.path)
    module = baseline.assets_uri / "user_module.py"
    module.write_text("def build_model(schema, options):\n    raise NotImplementedError\n")
    summary, _, blessing = evaluate(inputs, tmp_path / "its-blessing", baseline)
    assert blessing.record["model_module_digest"] == baseline.module_digest is not None
    recorded = blessing.record["model_module_digest"]

    summary, _, _ = evaluate(
        inputs, tmp_path / "intact", good, baseline_model_uri=str(baseline.path), baseline_module_digest=recorded
    )
    assert summary["baseline_model"] == str(baseline.path)
    marker = tmp_path / "ran"
    module.write_text(module.read_text() + f"open({str(marker)!r}, 'w').close()\n")
    with pytest.raises(ValueError, match="user_module.py changed since it was blessed.*refusing to run it"):
        evaluate(
            inputs, tmp_path / "tampered", good,
            baseline_model_uri=str(baseline.path), baseline_module_digest=recorded,
        )  # fmt: skip
    assert not marker.exists()


@pytest.mark.parametrize(
    ("parameters", "message"),
    [
        ({"slices": [{"by": "length", "boundaries": [3]}]}, "not a slice of this task"),
        ({"slices": [{"by": "label", "size": 3}]}, "unknown keys"),
        ({"thresholds": {"accuracy": {"max_drop": -1}}}, "must be ≥ 0"),
        ({"baseline_model_uri": "/nonexistent/model"}, "has no model.keras"),
    ],
)
def test_bad_parameters_are_named(inputs, tmp_path, parameters, message):
    with pytest.raises(ValueError, match=message):
        evaluate(inputs, tmp_path, inputs[2], **parameters)


def test_a_model_without_its_task_spec_is_refused(inputs, tmp_path):
    """The Evaluator reads the dataset and task options from the Model artifact, never guesses them."""
    bare = Model(tmp_path / "bare")
    bare.path.mkdir()
    bar_detector().save(bare.keras_file)
    with pytest.raises(FileNotFoundError, match="has no assets/task.json"):
        evaluate(inputs, tmp_path, bare)


def test_what_the_metrics_cannot_say_is_said_beside_them():
    """A helper's trial: iris of 12 rows blessed on 1 test example, linnerud with r2 -0.95, no warning either time."""
    from kflow.components.evaluator.caveats import caveats

    assert caveats({"split": "test", "example_count": 1, "accuracy": 1.0, "per_class_count": {"a": 1}}) == [
        "the test split holds 1 example(s): its metrics move by 100 % a record"
    ]
    (worse,) = caveats({"split": "test", "example_count": 200, "r2": -0.95})
    assert worse.startswith("r2 -0.95: the model predicts worse than the split's mean would")
    classes = {"split": "test", "example_count": 100, "per_class_count": {"a": 70, "b": 30}}
    (below,) = caveats({**classes, "accuracy": 0.6})
    assert below.startswith("accuracy 0.6 is below always answering 'a' (0.7)")
    assert caveats({**classes, "accuracy": 0.8}) == []
    # A user trial's: ISLR's Wage by race, the model answering '1. White' for all 308 test rows, accuracy exactly the
    # majority's share (0.8636), blessed without a word (the check was accuracy < share).
    wage = {"split": "test", "example_count": 308, "accuracy": 266 / 308, "macro_recall": 0.25,
            "per_class_count": {"1. White": 266, "2. Black": 20, "3. Asian": 18, "4. Other": 4},
            "confusion_matrix": {"categories": ["1. White", "2. Black", "3. Asian", "4. Other"],
                                 "matrix": [[266, 0, 0, 0], [20, 0, 0, 0], [18, 0, 0, 0], [4, 0, 0, 0]]}}  # fmt: skip
    (single,) = caveats(wage)
    assert single.startswith("the model answers '1. White' for every example of the split (accuracy 0.864, macro "
                             "recall 0.25): it has learnt no class apart")  # fmt: skip
    two = [[260, 6, 0, 0], [18, 2, 0, 0], [18, 0, 0, 0], [4, 0, 0, 0]]  # answers two classes
    answering_two = {**wage, "confusion_matrix": {**wage["confusion_matrix"], "matrix": two}}
    assert caveats(answering_two) == []
    assert caveats({"split": "test", "example_count": 100, "r2": 0.3}) == []
    # Most of the squared error one offset (ISLR Auto's weight by the tutorial's Sequential, 3 epochs: r2 -11.9, 92 %,
    # predictions 3053 lbs low; ended by the Rescaling said, r2 0.871): why, and what to do.
    (offset,) = caveats({"split": "test", "example_count": 39, "r2": -11.9, "loss": 1.0e7}, mean_error=-3053.0)
    assert "; 93% of its squared error is one offset, its predictions 3053 below the labels on average" in offset
    assert "keras.layers.Rescaling(options['head']['std'], offset=options['head']['mean'])" in offset
    (spread,) = caveats({"split": "test", "example_count": 39, "r2": -0.9, "loss": 1.0e6}, mean_error=300.0)
    assert "offset" not in spread  # 9 %: not what keeps it from the mean


def test_a_threshold_on_one_classs_recall_refuses_a_model_blind_to_a_rare_class():
    """A user trial: ISLR's Default, 3 % 'Yes'; a model of 0.25 recall on 'Yes' was blessed on accuracy 0.967 (about
    always answering 'No'), and `per_class_recall` could carry no threshold (TFMA's class_id thresholds)."""
    from kflow.components.datasets.tabular.metrics import TabularMetrics
    from kflow.components.evaluator.gate import check_thresholds, describe, run_checks

    thresholds = {"per_class_recall.Yes": {"lower_bound": 0.3, "max_drop": 0.05}, "accuracy": {"lower_bound": 0.9}}
    check_thresholds(thresholds, list(TabularMetrics.SCALARS), TabularMetrics.PER_CLASS)
    metrics = {"accuracy": 0.967, "per_class_recall": {"No": 0.998, "Yes": 0.25}}
    baseline = {"accuracy": 0.96, "per_class_recall": {"No": 0.99, "Yes": 0.4}}
    checks = {(check["metric"], check["bound"]): check for check in run_checks(thresholds, metrics, baseline)}
    low = checks[("per_class_recall.Yes", "lower_bound")]
    assert not low["passed"] and describe(low) == "per_class_recall.Yes 0.2500 >= 0.3: FAILED"
    assert not checks[("per_class_recall.Yes", "max_drop")]["passed"]  # 0.25 against the baseline's 0.4
    assert checks[("accuracy", "lower_bound")]["passed"]
    with pytest.raises(ValueError, match="threshold on unknown metric 'per_class_f1.Yes'"):
        check_thresholds(
            {"per_class_f1.Yes": {"lower_bound": 0.3}}, list(TabularMetrics.SCALARS), TabularMetrics.PER_CLASS
        )
