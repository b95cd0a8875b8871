"""The executor on the text tasks (tiny fixture Examples, small untrained models): WikiText-2 MLM and Quora."""

from __future__ import annotations

import json
import shutil

import keras
import numpy as np
import pytest
from google.protobuf import text_format
from sklearn.metrics import average_precision_score, roc_auc_score

from kflow.components.datasets.formulas import f1_optimal_threshold
from kflow.components.datasets.quora.task import QuoraTask
from kflow.components.datasets.wikitext2.task import WikiText2Task
from kflow.components.evaluator.executor import run
from kflow.components.evaluator.serving_check import TOLERANCE
from kflow.pipeline.dsl.artifacts import Model, ModelBlessing, ModelEvaluation, Schema
from tests.components.datasets.text_fixtures import text_schema, write_quora, write_wikitext
from tests.components.fixtures import save_model

WIKITEXT_OPTIONS = {
    "vocabulary_size": 200, "sequence_length": 48, "mask_selection_length": 12, "num_layers": 1,
    "hidden_dim": 32, "num_heads": 2, "intermediate_dim": 64, "dropout": 0.0,
}  # fmt: skip
QUORA_OPTIONS = {"max_tokens": 500, "embedding_dim": 16, "hidden_dim": 16, "max_length": 24}


def prepared(root, task_class, features, write, options):
    """Examples, a Schema artifact and a Model artifact (an untrained model with the task's assets)."""
    schema_proto = text_schema(features)
    schema = Schema(root / "schema")
    schema.path.mkdir(parents=True)
    schema.file.write_text(text_format.MessageToString(schema_proto))
    examples = write(root / "examples")
    task = task_class(schema_proto, model_options=options)
    model = Model(root / "model")
    task.prepare(examples, model.assets_uri)
    model.write_task_spec(task.name, task.model_name, options)
    save_model(task.build_model(), model)
    return examples, schema, model, task


def evaluate(inputs, folder, **parameters):
    examples, schema, model, _ = inputs
    evaluation, blessing = ModelEvaluation(folder / "evaluation"), ModelBlessing(folder / "blessing")
    summary = run(
        examples=examples, schema=schema, model=model, evaluation=evaluation, blessing=blessing, **parameters
    )  # fmt: skip
    return summary, evaluation, blessing


@pytest.fixture(scope="module")
def wikitext(tmp_path_factory):
    features = {"text": "BYTES"}
    return prepared(tmp_path_factory.mktemp("wikitext2"), WikiText2Task, features, write_wikitext, WIKITEXT_OPTIONS)


@pytest.fixture(scope="module")
def quora(tmp_path_factory):
    features = {"qid": "BYTES", "text": "BYTES", "label": "INT"}
    return prepared(tmp_path_factory.mktemp("quora"), QuoraTask, features, write_quora, QUORA_OPTIONS)


@pytest.mark.slow  # ~30 s; make test keeps the MLM's training and evaluation (test_wikitext2.py).
def test_fixed_seed_mlm_evaluation_is_reproducible_to_the_last_digit(wikitext, tmp_path):
    parameters = {"batch_size": 16}
    slices = [{"by": "length", "boundaries": [12, 16]}]
    _, first, _ = evaluate(wikitext, tmp_path / "a", seed=7, slices=slices, **parameters)
    _, second, _ = evaluate(wikitext, tmp_path / "b", seed=7, slices=slices, **parameters)
    _, other, _ = evaluate(wikitext, tmp_path / "c", seed=8, **parameters)
    assert (first.path / "metrics.json").read_text() == (second.path / "metrics.json").read_text()
    metrics = first.metrics
    assert metrics["example_count"] == 60 and metrics["masked_token_count"] > 60
    assert metrics["perplexity"] == pytest.approx(np.exp(metrics["loss"]))
    assert 0.0 <= metrics["masked_accuracy"] <= 1.0
    # Another seed masks other tokens.
    assert other.metrics["loss"] != metrics["loss"]
    by_length = metrics["slices"]["length"]
    assert sum(entry["example_count"] for entry in by_length.values()) == 60
    assert sum(entry["masked_token_count"] for entry in by_length.values()) == metrics["masked_token_count"]


def test_quora_metrics_match_a_recomputation_from_the_model_scores(quora, tmp_path):
    examples, _, model, task = quora
    summary, evaluation, blessing = evaluate(
        quora, tmp_path, slices=[{"by": "length", "boundaries": [40]}],
        thresholds={"roc_auc": {"lower_bound": 1.01}},
    )  # fmt: skip

    import keras

    keras_model = keras.models.load_model(model.keras_file)

    def scores(split):
        pairs = [
            (keras_model.predict_on_batch(x).ravel(), y.ravel())
            for x, y, _ in task.dataset(examples, split, batch_size=256, training=False, seed=0).as_numpy_iterator()
        ]
        return np.concatenate([p for p, _ in pairs]).astype(np.float64), np.concatenate([y for _, y in pairs])

    eval_scores, eval_labels = scores("eval")
    test_scores, test_labels = scores("test")
    metrics = evaluation.metrics
    assert metrics["example_count"] == 100
    assert metrics["best_threshold"] == pytest.approx(f1_optimal_threshold(eval_labels, eval_scores)[0], rel=1e-6)
    assert metrics["roc_auc"] == pytest.approx(roc_auc_score(test_labels, test_scores), abs=1e-6)
    assert metrics["pr_auc"] == pytest.approx(average_precision_score(test_labels, test_scores), abs=1e-6)
    predicted = test_scores >= metrics["best_threshold"]
    assert metrics["recall_at_best"] == pytest.approx(np.sum(predicted & (test_labels == 1)) / test_labels.sum())
    assert sum(entry["example_count"] for entry in metrics["slices"]["length"].values()) == 100
    for name in ("roc_pr_curves.png", "score_histogram.png", "slices_length.png"):
        assert (evaluation.path / name).exists()
    # An impossible bound: NOT_BLESSED, naming the check.
    assert not blessing.blessed and summary["failed_checks"] == [f"roc_auc {metrics['roc_auc']:.4f} >= 1.01: FAILED"]


# 13-24 s; make test keeps a bfloat16 model's serving check (tests/components/evaluator/test_serving_check.py)
@pytest.mark.slow
def test_a_bfloat16_mlm_is_served_within_its_own_distance_from_float32_and_a_lost_export_is_not(tmp_path):
    """A model trained with trainer.mixed_precision computes in bfloat16: its SavedModel and model.keras round apart
    by far more than float32's bound (every such BERT was refused, the shipped MLM's logits 1.81 apart). The bound
    widens to four times the model's own distance from its float32 twin (low_precision.py); a SavedModel exported from
    other weights is still refused."""
    options = {**WIKITEXT_OPTIONS, "num_layers": 2, "hidden_dim": 64}
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        examples, schema, model, task = prepared(tmp_path, WikiText2Task, {"text": "BYTES"}, write_wikitext, options)
        keras.utils.set_random_seed(1)
        other = task.build_model()  # the same network, other weights
    finally:
        keras.mixed_precision.set_global_policy("float32")
    _, evaluation, blessing = evaluate((examples, schema, model, task), tmp_path / "served", split="test")
    check = json.loads((evaluation.path / "serving_check.json").read_text())
    low = check["low_precision"]
    assert low["compute_dtype"] == "bfloat16" and low["float32_difference"] > 0
    assert check["max_abs_difference"] > TOLERANCE * check["output_scale"]  # float32's bound would refuse it
    assert check["passed"] and check["tolerance"] == pytest.approx(low["margin"] * low["float32_difference"])
    assert blessing.blessed

    shutil.rmtree(model.serving_uri)
    other.export(str(model.serving_uri), format="tf_saved_model", verbose=False)
    summary, evaluation, blessing = evaluate((examples, schema, model, task), tmp_path / "lost", split="test")
    check = json.loads((evaluation.path / "serving_check.json").read_text())
    assert not check["passed"] and check["max_abs_difference"] > 10 * check["tolerance"], check
    assert not blessing.blessed and any("serving_predictions" in line for line in summary["failed_checks"])
