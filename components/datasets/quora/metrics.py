"""Quora duplicate questions: accuracy/precision/recall/F1 at 0.5 and at the F1-optimal threshold, ROC and PR AUC.

The F1-optimal threshold is chosen on the eval split (the executor runs it first) and
applied unchanged on the evaluated split. The accumulator keeps one float score and one
label per question (not the questions), so the exact curves can be drawn at the end.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from kflow.components.datasets.formulas import (
    binary_crossentropy,
    binary_metrics,
    f1_optimal_threshold,
    pr_auc,
    precision_recall_curve,
    roc_auc,
    roc_curve,
)
from kflow.components.datasets.metrics import TaskMetrics, bucket_keys
from kflow.components.util import plots


class QuoraMetrics(TaskMetrics):
    """Model outputs are duplicate probabilities [batch, 1]; labels 0/1 [batch, 1]."""

    HEADLINE = "roc_auc"
    SCALARS = {
        "example_count": "higher",
        "loss": "lower",
        "accuracy": "higher",
        "precision": "higher",
        "recall": "higher",
        "f1": "higher",
        "best_threshold": "higher",
        "accuracy_at_best": "higher",
        "precision_at_best": "higher",
        "recall_at_best": "higher",
        "f1_at_best": "higher",
        "roc_auc": "higher",
        "pr_auc": "higher",
    }
    SLICES = ("label", "length")
    needs_eval_pass = True

    def __init__(self, **options: Any):
        super().__init__(**options)
        self.threshold: float | None = None
        self._scores: list[np.ndarray] = []
        self._labels: list[np.ndarray] = []

    def calibrate_from(self, other: TaskMetrics) -> None:
        self.threshold = getattr(other, "threshold", None)

    def choose_threshold(self) -> float:
        """Sets and returns the F1-optimal threshold on what this accumulator has seen (the eval split)."""
        scores, labels = self.arrays()
        self.threshold, _ = f1_optimal_threshold(labels, scores)
        return self.threshold

    def update(self, x, y, outputs, sample_weight=None) -> None:
        self._scores.append(np.asarray(outputs, np.float64).ravel())
        self._labels.append(np.asarray(y, np.float64).ravel())

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        if not self._scores:
            raise ValueError("the split holds no examples")
        return np.concatenate(self._scores), np.concatenate(self._labels)

    def result(self) -> dict[str, Any]:
        scores, labels = self.arrays()
        result: dict[str, Any] = {
            "example_count": int(len(scores)),
            "positive_count": int(labels.sum()),
            "loss": float(binary_crossentropy(scores, labels).mean()),
            **binary_metrics(labels, scores, 0.5),
        }
        if self.threshold is not None:
            at_best = binary_metrics(labels, scores, self.threshold)
            result["best_threshold"] = self.threshold
            result.update({f"{name}_at_best": value for name, value in at_best.items()})
        both_classes = 0 < labels.sum() < len(labels)
        result["roc_auc"] = roc_auc(labels, scores) if both_classes else None
        result["pr_auc"] = pr_auc(labels, scores) if labels.sum() > 0 else None
        return result

    def slice_keys(self, by, x, y, boundaries):
        if by == "label":
            return np.array([f"label={int(label)}" for label in np.asarray(y).ravel()], dtype=object)
        if by == "length":
            # Characters of the question pair (both questions, as the model reads them).
            lengths = np.array([len(text.decode() if isinstance(text, bytes) else str(text)) for text in _texts(x)])
            return bucket_keys(lengths, boundaries)
        raise ValueError(f"quora slices by {', '.join(self.SLICES)}, not {by!r}")

    def plots(self, folder: Path) -> list[dict[str, str]]:
        scores, labels = self.arrays()
        if not 0 < labels.sum() < len(labels):
            return []
        fpr, tpr, _ = roc_curve(labels, scores)
        precision, recall, _ = precision_recall_curve(labels, scores)
        curves = plots.roc_and_pr_curves(
            fpr, tpr, roc_auc(labels, scores), recall, precision, pr_auc(labels, scores), labels.mean(), folder
        )
        return [curves, plots.score_histogram(scores, labels, self.threshold, folder)]

    def kfp_metrics(self) -> dict[str, Any]:
        scores, labels = self.arrays()
        threshold = self.threshold if self.threshold is not None else 0.5
        predicted = (scores >= threshold).astype(np.int64)
        matrix = np.zeros((2, 2), dtype=np.int64)
        np.add.at(matrix, (labels.astype(np.int64), predicted), 1)
        data: dict[str, Any] = {"confusion_matrix": {"categories": ["0", "1"], "matrix": matrix.tolist()}}
        if 0 < labels.sum() < len(labels):
            fpr, tpr, thresholds = roc_curve(labels, scores)
            # At most ~200 points: KFP's UI draws the curve from this list.
            keep = np.unique(np.linspace(0, len(fpr) - 1, min(len(fpr), 200)).astype(int))
            data["roc"] = {
                "fpr": fpr[keep].tolist(),
                "tpr": tpr[keep].tolist(),
                "thresholds": np.minimum(thresholds[keep], 1.0).tolist(),
            }
        return data


def _texts(x: Any) -> list:
    if isinstance(x, dict):
        values = [np.asarray(value).ravel() for value in x.values()]
        return [
            b" ".join(v if isinstance(v, bytes) else str(v).encode() for v in row) for row in zip(*values, strict=True)
        ]
    return list(np.asarray(x).ravel())
