"""MNIST: accuracy, loss, per-class precision/recall/accuracy and the confusion matrix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from kflow.components.datasets.formulas import (
    confusion_matrix,
    per_class_precision_recall,
    sparse_crossentropy,
)
from kflow.components.datasets.metrics import TaskMetrics
from kflow.components.util import plots


class MnistMetrics(TaskMetrics):
    """Options: `num_classes`, `class_names` (default: the indices). Outputs: class probabilities [batch, classes]."""

    HEADLINE = "accuracy"
    SCALARS = {"example_count": "higher", "accuracy": "higher", "loss": "lower"}
    PER_CLASS = ("per_class_precision", "per_class_recall")
    SLICES = ("label",)

    def __init__(self, num_classes: int = 10, class_names: list[str] | None = None, **options: Any):
        super().__init__(num_classes=num_classes, class_names=class_names, **options)
        self.num_classes = num_classes
        self.classes = list(class_names) if class_names else [str(label) for label in range(num_classes)]
        if len(self.classes) != num_classes:
            raise ValueError(f"{len(self.classes)} class names for {num_classes} classes")
        self.matrix = np.zeros((num_classes, num_classes), dtype=np.int64)
        self.loss_sum = 0.0

    def update(self, x, y, outputs, sample_weight=None) -> None:
        labels = np.asarray(y, np.int64).ravel()
        if labels.size and (labels.min() < 0 or labels.max() >= self.num_classes):
            raise ValueError(
                f"a label is outside the schema's domain 0..{self.num_classes - 1}: {labels.min()}..{labels.max()}"
            )
        self.loss_sum += float(np.sum(sparse_crossentropy(outputs, labels)))
        self.matrix += confusion_matrix(labels, outputs.argmax(axis=-1), self.num_classes)

    def result(self) -> dict[str, Any]:
        counts = self.matrix.sum(axis=1)
        total = int(counts.sum())
        if total == 0:
            raise ValueError("the split holds no examples")
        precision, recall = per_class_precision_recall(self.matrix)
        classes = self.classes
        return {
            "example_count": total,
            "accuracy": float(np.trace(self.matrix) / total),
            "loss": self.loss_sum / total,
            # Per-class accuracy is the recall of the class (kept under its historical name).
            "per_class_accuracy": dict(zip(classes, recall, strict=True)),
            "per_class_precision": dict(zip(classes, precision, strict=True)),
            "per_class_recall": dict(zip(classes, recall, strict=True)),
            "per_class_count": {label: int(count) for label, count in zip(classes, counts, strict=True)},
            "confusion_matrix": {"categories": classes, "matrix": self.matrix.tolist()},
        }

    def slice_keys(self, by, x, y, boundaries):
        if by != "label":
            raise ValueError(f"mnist slices by {', '.join(self.SLICES)}, not {by!r}")
        return np.array([f"label={self.classes[int(label)]}" for label in np.asarray(y).ravel()], dtype=object)

    def plots(self, folder: Path) -> list[dict[str, str]]:
        labels = self.classes
        precision, recall = per_class_precision_recall(self.matrix)
        return [
            plots.confusion_matrix(self.matrix, labels, folder),
            plots.class_bars(labels, precision, recall, folder),
        ]

    def kfp_metrics(self) -> dict[str, Any]:
        return {
            "confusion_matrix": {
                "categories": self.classes,
                "matrix": self.matrix.tolist(),
            }
        }
