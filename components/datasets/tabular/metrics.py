"""Tabular metrics: classification (accuracy, log loss, per-class precision/recall, macro F1, the confusion
matrix; ROC and PR AUC of the second class for binary tasks) or regression (MSE loss, MAE, RMSE, R²).

Slices: by label (classification: per class; regression: in buckets, by default below, around and above the
training labels' mean, one standard deviation wide) or by any feature, `{by: <feature>}`: one slice per value of a
string or integer feature, per bucket of a numeric one with `boundaries`; missing values form their own slice.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from kflow.components.datasets.formulas import (
    confusion_matrix,
    per_class_precision_recall,
    pr_auc,
    precision_recall_curve,
    roc_auc,
    roc_curve,
    sparse_crossentropy,
)
from kflow.components.datasets.metrics import TaskMetrics, bucket_keys
from kflow.components.util import plots
from kflow.pipeline.dsl.config_validation import did_you_mean


class TabularMetrics(TaskMetrics):
    """Options: `kind` (classification | regression) and `classes` (the class names, classification)."""

    SCALARS = {
        "example_count": "higher",
        "loss": "lower",
        "accuracy": "higher",
        "macro_precision": "higher",
        "macro_recall": "higher",
        "macro_f1": "higher",
        "roc_auc": "higher",
        "pr_auc": "higher",
        "mae": "lower",
        "rmse": "lower",
        "r2": "higher",
    }
    SLICES = ("label",)
    SLICES_BY_FEATURE = True
    PER_CLASS = ("per_class_precision", "per_class_recall")
    BY_KIND = {
        "classification": (
            "example_count", "loss", "accuracy", "macro_precision", "macro_recall", "macro_f1", "roc_auc", "pr_auc",
        ),
        "regression": ("example_count", "loss", "mae", "rmse", "r2"),
    }  # fmt: skip
    TWO_CLASSES = ("roc_auc", "pr_auc")

    @classmethod
    def threshold_problem(cls, metric: str, kind: str, classes: list[str]) -> str | None:
        """Why a threshold on `metric` cannot hold for this task (`classes`: the label values seen), or None (also
        where the task is unknown: no label, said by another check)."""
        if kind not in cls.BY_KIND:
            return None
        top, dot, name = metric.partition(".")
        if dot and top in cls.PER_CLASS:
            if kind != "classification":
                return f"a {kind} task has no per-class metrics"
            if classes and name not in classes:
                shown = ", ".join(classes[:8]) + (", …" if len(classes) > 8 else "")
                return f"the label has no class {name!r}{did_you_mean(name, classes)} (classes: {shown})"
            return None
        if metric in cls.SCALARS and metric not in cls.BY_KIND[kind]:
            many = kind == "classification" and len(classes) > 2  # no metric of two classes to offer
            offered = [name for name in cls.BY_KIND[kind] if not (many and name in cls.TWO_CLASSES)]
            return f"a {kind} task has no {metric} (its metrics: {', '.join(offered)})"
        if kind == "classification" and metric in cls.TWO_CLASSES and len(classes) > 2:
            shown = ", ".join(classes[:5]) + (", …" if len(classes) > 5 else "")
            return f"{metric} is defined for two classes; the label has {len(classes)} ({shown})"
        return None

    def __init__(
        self,
        kind: str = "classification",
        classes: list[str] | None = None,
        label_boundaries: list[float] | None = None,
        **options: Any,
    ):
        super().__init__(kind=kind, classes=list(classes or []), label_boundaries=label_boundaries, **options)
        self.label_boundaries = list(label_boundaries or [])  # regression: `{by: label}` without boundaries
        if kind not in ("classification", "regression"):
            raise ValueError(f"kind must be classification or regression, got {kind!r}")
        self.kind, self.classes = kind, list(classes or [])
        if kind == "classification" and len(self.classes) < 2:
            raise ValueError("classification metrics need the class names (at least two)")
        self.HEADLINE = "accuracy" if kind == "classification" else "rmse"
        self._outputs: list[np.ndarray] = []
        self._labels: list[np.ndarray] = []

    def update(self, x, y, outputs, sample_weight=None) -> None:
        outputs = np.asarray(outputs, np.float64)
        self._outputs.append(outputs if self.kind == "classification" else outputs.ravel())
        self._labels.append(np.asarray(y).ravel())

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        if not self._outputs:
            raise ValueError("the split holds no examples")
        return np.concatenate(self._outputs), np.concatenate(self._labels)

    def result(self) -> dict[str, Any]:
        outputs, labels = self.arrays()
        if self.kind == "regression":
            errors = outputs - labels.astype(np.float64)
            variance = float(np.var(labels))
            return {
                "example_count": int(len(labels)),
                "loss": float(np.mean(errors**2)),
                "mae": float(np.mean(np.abs(errors))),
                "rmse": float(np.sqrt(np.mean(errors**2))),
                "r2": 1.0 - float(np.mean(errors**2)) / variance if variance > 0 else None,
            }
        labels = labels.astype(np.int64)
        matrix = confusion_matrix(labels, outputs.argmax(axis=-1), len(self.classes))
        precision, recall = per_class_precision_recall(matrix)
        f1 = [2 * p * r / (p + r) if p and r else 0.0 for p, r in zip(precision, recall, strict=True)]
        present = [k for k in range(len(self.classes)) if matrix[k].sum()]
        # Of examples of one class (a slice by the label), every prediction of it is right: its precision is 1 by
        # construction, as is the macro mean over that class: None, as roc_auc of one class. Recall is accuracy there.
        single = len(present) < 2
        result: dict[str, Any] = {
            "example_count": int(len(labels)),
            "loss": float(sparse_crossentropy(outputs, labels).mean()),
            "accuracy": float(np.trace(matrix) / len(labels)),
            "macro_precision": None if single else float(np.mean([precision[k] or 0.0 for k in present])),
            "macro_recall": float(np.mean([recall[k] or 0.0 for k in present])),
            "macro_f1": None if single else float(np.mean([f1[k] for k in present])),
            "per_class_precision": dict(zip(self.classes, precision, strict=True)),
            "per_class_recall": dict(zip(self.classes, recall, strict=True)),
            "per_class_count": {name: int(n) for name, n in zip(self.classes, matrix.sum(axis=1), strict=True)},
            "confusion_matrix": {"categories": self.classes, "matrix": matrix.tolist()},
        }
        if len(self.classes) == 2:
            positives = labels == 1
            both = 0 < positives.sum() < len(labels)
            result["roc_auc"] = roc_auc(positives, outputs[:, 1]) if both else None
            result["pr_auc"] = pr_auc(positives, outputs[:, 1]) if positives.any() else None
        return result

    def slice_keys(self, by, x, y, boundaries):
        if by == "label" and self.kind == "classification":
            return np.array([f"label={self.classes[int(k)]}" for k in np.asarray(y).ravel()], dtype=object)
        if by == "label":  # a quantity: in buckets, the given ones or around the training labels' mean
            buckets = boundaries or self.label_boundaries
            if not buckets:
                raise ValueError("slicing a regression by its label needs boundaries, e.g. [0, 10, 100]")
            labels = np.asarray(y, np.float64).ravel()
            return np.array([f"label {key}" for key in bucket_keys(labels, buckets)], dtype=object)
        if not isinstance(x, dict) or by not in x:
            known = ", ".join(["label", *sorted(x if isinstance(x, dict) else [])])
            raise ValueError(f"cannot slice by {by!r}: no such feature (slice by: {known})")
        values = np.asarray(x[by]).ravel()
        if values.dtype == object or values.dtype.kind in "SU":
            return np.array([f"{by}={_text(v)}" if _text(v) else f"{by}=missing" for v in values], dtype=object)
        numbers = values.astype(np.float64)
        present = numbers[~np.isnan(numbers)]
        if not boundaries and np.all(present == np.round(present)):  # Integer codes: one slice per value.
            return np.array([f"{by}=missing" if np.isnan(v) else f"{by}={int(v)}" for v in numbers], dtype=object)
        if not boundaries:
            raise ValueError(f"slicing by the non-integer feature {by!r} needs boundaries, e.g. [0, 10, 100]")
        keys = bucket_keys(np.nan_to_num(values, nan=0.0), boundaries).astype(object)
        keys = np.array([f"{by} {key}" for key in keys], dtype=object)
        keys[np.isnan(values.astype(np.float64))] = f"{by}=missing"
        return keys

    def plots(self, folder: Path) -> list[dict[str, str]]:
        outputs, labels = self.arrays()
        if self.kind == "regression":
            return [plots.predicted_vs_actual(labels.astype(np.float64), outputs, folder)]
        labels = labels.astype(np.int64)
        matrix = confusion_matrix(labels, outputs.argmax(axis=-1), len(self.classes))
        precision, recall = per_class_precision_recall(matrix)
        figures = [
            plots.confusion_matrix(matrix, self.classes, folder),
            plots.class_bars(self.classes, precision, recall, folder),
        ]
        positives = labels == 1
        if len(self.classes) == 2 and 0 < positives.sum() < len(labels):
            fpr, tpr, _ = roc_curve(positives, outputs[:, 1])
            precision_curve, recall_curve, _ = precision_recall_curve(positives, outputs[:, 1])
            figures.append(
                plots.roc_and_pr_curves(
                    fpr,
                    tpr,
                    roc_auc(positives, outputs[:, 1]),
                    recall_curve,
                    precision_curve,
                    pr_auc(positives, outputs[:, 1]),
                    positives.mean(),
                    folder,
                )
            )
        return figures

    def kfp_metrics(self) -> dict[str, Any]:
        if self.kind == "regression":
            return {}
        outputs, labels = self.arrays()
        matrix = confusion_matrix(labels.astype(np.int64), outputs.argmax(axis=-1), len(self.classes))
        return {"confusion_matrix": {"categories": self.classes, "matrix": matrix.tolist()}}


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
