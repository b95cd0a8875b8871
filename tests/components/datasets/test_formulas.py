"""The metric arithmetic on hand-computed examples (independent of any model)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.metrics import average_precision_score, roc_auc_score

from kflow.components.datasets.formulas import (
    binary_metrics,
    confusion_matrix,
    f1_optimal_threshold,
    per_class_precision_recall,
    perplexity,
    pr_auc,
    roc_auc,
)
from kflow.components.datasets.metrics import bucket_keys
from kflow.components.datasets.mnist.metrics import MnistMetrics
from kflow.components.datasets.quora.metrics import QuoraMetrics
from kflow.components.datasets.wikitext2.metrics import WikiText2Metrics

# Six scores, highest first, with labels 1 0 1 1 0 0: 3 positives, 3 negatives.
LABELS = np.array([1, 0, 1, 1, 0, 0])
SCORES = np.array([0.9, 0.8, 0.7, 0.4, 0.3, 0.2])


def test_confusion_matrix_and_per_class_precision_recall():
    matrix = confusion_matrix(np.array([0, 1, 2, 2, 1]), np.array([0, 2, 2, 1, 1]), 3)
    assert matrix.tolist() == [[1, 0, 0], [0, 1, 1], [0, 1, 1]]
    precision, recall = per_class_precision_recall(matrix)
    assert precision == [1.0, 0.5, 0.5]
    assert recall == [1.0, 0.5, 0.5]
    # A class never predicted has no precision; one never seen has no recall.
    precision, recall = per_class_precision_recall(confusion_matrix(np.array([0, 0]), np.array([0, 0]), 2))
    assert precision == [1.0, None] and recall == [1.0, None]


def test_binary_metrics_at_one_half():
    # Predicted positive: 0.9, 0.8, 0.7 -> tp 2, fp 1, fn 1, tn 2.
    assert binary_metrics(LABELS, SCORES, 0.5) == pytest.approx(
        {"accuracy": 4 / 6, "precision": 2 / 3, "recall": 2 / 3, "f1": 2 / 3}
    )


def test_roc_auc_counts_ordered_pairs():
    # Positive 0.9 beats 3 negatives, 0.7 and 0.4 beat 2 each: 7 of 9 pairs.
    assert roc_auc(LABELS, SCORES) == pytest.approx(7 / 9)
    assert roc_auc(np.array([1, 0]), np.array([0.5, 0.5])) == pytest.approx(0.5)  # A tie counts one half.
    with pytest.raises(ValueError, match="both positive and negative"):
        roc_auc(np.array([1, 1]), np.array([0.2, 0.3]))


def test_pr_auc_is_average_precision():
    # Precision at each positive: 1 (R 1/3), 2/3 (R 2/3), 3/4 (R 1): (1 + 2/3 + 3/4) / 3.
    assert pr_auc(LABELS, SCORES) == pytest.approx(29 / 36)


def test_f1_optimal_threshold():
    # F1 by threshold: 0.9: 1/2, 0.8: 2/5, 0.7: 2/3, 0.4: 6/7, 0.3: 3/4, 0.2: 2/3.
    threshold, f1 = f1_optimal_threshold(LABELS, SCORES)
    assert threshold == 0.4
    assert f1 == pytest.approx(6 / 7)


def test_curve_areas_agree_with_scikit_learn_on_random_ties():
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 2, 500)
    scores = np.round(rng.random(500) * 0.6 + labels * 0.3, 2)  # Rounded: many ties.
    assert roc_auc(labels, scores) == pytest.approx(roc_auc_score(labels, scores), abs=1e-12)
    assert pr_auc(labels, scores) == pytest.approx(average_precision_score(labels, scores), abs=1e-12)


def test_perplexity_from_summed_nll():
    assert perplexity(math.log(2) + math.log(4), 2) == pytest.approx(2**1.5)
    with pytest.raises(ValueError, match="at least one token"):
        perplexity(0.0, 0)


def test_bucket_keys_name_half_open_intervals():
    keys = bucket_keys(np.array([5, 20, 39, 40, 100]), [20, 40])
    assert keys.tolist() == ["<20", "[20,40)", "[20,40)", ">=40", ">=40"]
    with pytest.raises(ValueError, match="ascending"):
        bucket_keys(np.array([1]), [40, 20])


def test_mnist_metrics_stream_over_batches():
    metrics = MnistMetrics(num_classes=3)
    probabilities = np.array([[0.5, 0.25, 0.25], [0.25, 0.5, 0.25], [0.25, 0.25, 0.5], [0.5, 0.25, 0.25]])
    labels = np.array([0, 1, 1, 2])
    metrics.update(None, labels[:2], probabilities[:2])  # Two batches give the same as one.
    metrics.update(None, labels[2:], probabilities[2:])
    result = metrics.result()
    assert result["example_count"] == 4
    assert result["accuracy"] == 0.5
    assert result["loss"] == pytest.approx((math.log(2) + math.log(2) + math.log(4) + math.log(4)) / 4)
    assert result["confusion_matrix"]["matrix"] == [[1, 0, 0], [0, 1, 1], [1, 0, 0]]
    assert result["per_class_precision"] == {"0": 0.5, "1": 1.0, "2": 0.0}
    assert result["per_class_recall"] == {"0": 1.0, "1": 0.5, "2": 0.0}
    with pytest.raises(ValueError, match="outside the schema's domain"):
        metrics.update(None, np.array([3]), probabilities[:1])


def test_quora_metrics_apply_the_threshold_chosen_on_eval():
    on_eval = QuoraMetrics()
    on_eval.update(None, LABELS[:, None], SCORES[:, None])
    assert on_eval.choose_threshold() == 0.4
    on_test = on_eval.new()
    # Test: 1 0 1 0 with scores 0.6 0.45 0.35 0.1 -> at 0.4: tp 1, fp 1, fn 1, tn 1.
    on_test.update(None, np.array([[1], [0], [1], [0]]), np.array([[0.6], [0.45], [0.35], [0.1]]))
    result = on_test.result()
    assert result["best_threshold"] == 0.4
    assert result["f1_at_best"] == pytest.approx(0.5)
    assert result["accuracy_at_best"] == pytest.approx(0.5)
    assert result["f1"] == pytest.approx(2 / 3)  # At 0.5: tp 1, fp 0, fn 1.
    assert result["roc_auc"] == pytest.approx(3 / 4)  # 0.6 beats both negatives, 0.35 beats 0.1.
    assert result["pr_auc"] == pytest.approx((1 + 2 / 3) / 2)
    assert result["loss"] == pytest.approx(-np.mean(np.log([0.6, 0.55, 0.35, 0.9])))


def test_wikitext2_metrics_weigh_out_padding_positions():
    metrics = WikiText2Metrics()
    logits = np.log(np.array([[[0.5, 0.25, 0.25], [0.5, 0.25, 0.25], [0.1, 0.1, 0.8]]]))
    # Two real masked tokens (labels 0 and 1) and one padding position (weight 0).
    metrics.update(None, np.array([[0, 1, 0]]), logits, np.array([[1.0, 1.0, 0.0]]))
    result = metrics.result()
    assert result["masked_token_count"] == 2
    assert result["masked_accuracy"] == 0.5
    assert result["loss"] == pytest.approx(1.5 * math.log(2))
    assert result["perplexity"] == pytest.approx(2**1.5)
    assert "most_frequent_token_accuracy" not in result  # No baseline token was given.


def test_mlm_most_frequent_token_baseline_counts_only_real_masked_positions():
    metrics = WikiText2Metrics(baseline_token_id=1)
    logits = np.zeros((1, 4, 3))
    # Masked labels 1, 1, 2 and a padding position holding label 1 with weight 0.
    metrics.update(None, np.array([[1, 1, 2, 1]]), logits, np.array([[1.0, 1.0, 1.0, 0.0]]))
    assert metrics.result()["most_frequent_token_accuracy"] == pytest.approx(2 / 3)
