"""The metric arithmetic, in numpy, independent of models and data: unit-tested on hand-computed examples."""

from __future__ import annotations

import numpy as np

# Keras clips probabilities to [epsilon, 1 - epsilon] in its crossentropies; so do we.
EPSILON = 1e-7


def confusion_matrix(labels: np.ndarray, predictions: np.ndarray, num_classes: int) -> np.ndarray:
    """[num_classes, num_classes] counts: row = true label, column = predicted label."""
    labels, predictions = np.asarray(labels, np.int64).ravel(), np.asarray(predictions, np.int64).ravel()
    flat = np.bincount(labels * num_classes + predictions, minlength=num_classes * num_classes)
    return flat.reshape(num_classes, num_classes)


def per_class_precision_recall(matrix: np.ndarray) -> tuple[list[float | None], list[float | None]]:
    """Precision (correct / predicted as k) and recall (correct / labelled k) per class; None when undefined."""
    correct = np.diag(matrix)
    predicted, actual = matrix.sum(axis=0), matrix.sum(axis=1)
    precision = [float(correct[k] / predicted[k]) if predicted[k] else None for k in range(len(matrix))]
    recall = [float(correct[k] / actual[k]) if actual[k] else None for k in range(len(matrix))]
    return precision, recall


def sparse_crossentropy(probabilities: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Per-row -log p[label] of probability rows (the last axis holds the classes)."""
    picked = np.take_along_axis(probabilities, labels[..., None].astype(np.int64), axis=-1)[..., 0]
    return -np.log(np.clip(picked, EPSILON, 1.0 - EPSILON))


def log_softmax(logits: np.ndarray) -> np.ndarray:
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def binary_crossentropy(probabilities: np.ndarray, labels: np.ndarray) -> np.ndarray:
    p = np.clip(probabilities, EPSILON, 1.0 - EPSILON)
    return -(labels * np.log(p) + (1 - labels) * np.log(1 - p))


def binary_counts(labels: np.ndarray, scores: np.ndarray, threshold: float) -> dict[str, int]:
    """True/false positives/negatives when `score >= threshold` predicts the positive class."""
    labels, predicted = np.asarray(labels).astype(bool), np.asarray(scores) >= threshold
    return {
        "tp": int(np.sum(predicted & labels)),
        "fp": int(np.sum(predicted & ~labels)),
        "tn": int(np.sum(~predicted & ~labels)),
        "fn": int(np.sum(~predicted & labels)),
    }


def binary_metrics(labels: np.ndarray, scores: np.ndarray, threshold: float) -> dict[str, float]:
    """Accuracy, precision, recall and F1 at `threshold` (0 where a ratio's denominator is 0)."""
    c = binary_counts(labels, scores, threshold)
    total = c["tp"] + c["fp"] + c["tn"] + c["fn"]
    precision = c["tp"] / (c["tp"] + c["fp"]) if c["tp"] + c["fp"] else 0.0
    recall = c["tp"] / (c["tp"] + c["fn"]) if c["tp"] + c["fn"] else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "accuracy": (c["tp"] + c["tn"]) / total if total else 0.0,
        "precision": precision,
        "recall": recall,
        "f1": f1,
    }


def _curve_points(labels: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cumulative (true positives, false positives, threshold) at each distinct score, highest first."""
    labels, scores = np.asarray(labels, np.float64).ravel(), np.asarray(scores, np.float64).ravel()
    order = np.argsort(-scores, kind="mergesort")
    scores, labels = scores[order], labels[order]
    # The last index of each run of equal scores: ties move together along the curve.
    last = np.r_[np.nonzero(np.diff(scores))[0], len(scores) - 1]
    tps = np.cumsum(labels)[last]
    fps = (last + 1) - tps
    return tps, fps, scores[last]


def roc_curve(labels: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(false positive rates, true positive rates, thresholds), starting at (0, 0)."""
    tps, fps, thresholds = _curve_points(labels, scores)
    positives, negatives = tps[-1], fps[-1]
    if positives == 0 or negatives == 0:
        raise ValueError("a ROC curve needs both positive and negative labels")
    return np.r_[0.0, fps / negatives], np.r_[0.0, tps / positives], np.r_[np.inf, thresholds]


def roc_auc(labels: np.ndarray, scores: np.ndarray) -> float:
    """Area under the ROC curve (trapezoids; tied scores count one half)."""
    fpr, tpr, _ = roc_curve(labels, scores)
    return float(np.trapezoid(tpr, fpr))


def precision_recall_curve(labels: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(precisions, recalls, thresholds) at each distinct score, highest threshold first."""
    tps, fps, thresholds = _curve_points(labels, scores)
    if tps[-1] == 0:
        raise ValueError("a precision-recall curve needs positive labels")
    return tps / (tps + fps), tps / tps[-1], thresholds


def pr_auc(labels: np.ndarray, scores: np.ndarray) -> float:
    """Area under the precision-recall curve as average precision: sum of (R_n - R_{n-1}) P_n."""
    precision, recall, _ = precision_recall_curve(labels, scores)
    return float(np.sum(np.diff(np.r_[0.0, recall]) * precision))


def f1_optimal_threshold(labels: np.ndarray, scores: np.ndarray) -> tuple[float, float]:
    """The score threshold (predict positive when score >= it) with the highest F1, and that F1.

    Ties go to the highest threshold (the fewest positive predictions).
    """
    precision, recall, thresholds = precision_recall_curve(labels, scores)
    with np.errstate(invalid="ignore", divide="ignore"):
        f1 = np.where(precision + recall > 0, 2 * precision * recall / (precision + recall), 0.0)
    best = int(np.argmax(f1))
    return float(thresholds[best]), float(f1[best])


def perplexity(nll_sum: float, token_count: float) -> float:
    """exp(mean negative log-likelihood per token) from the summed NLL of `token_count` tokens."""
    if token_count <= 0:
        raise ValueError("perplexity needs at least one token")
    return float(np.exp(nll_sum / token_count))
