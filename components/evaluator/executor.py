"""Evaluator executor: streams one split through the trained model, writes its metrics, blesses or not."""

from __future__ import annotations

import logging
from numbers import Real
from typing import Any

import keras
import numpy as np

from components.util.examples_dataset import image_shape, make_dataset
from components.util.schema import feature_spec, int_domain, load_schema
from pipeline.dsl.artifacts import Examples, Model, ModelBlessing, ModelEvaluation, Schema

log = logging.getLogger("kflow.evaluator")

IMAGE_FEATURE = "image"
LABEL_FEATURE = "label"

# The top-level numeric entries of metrics.json: the metrics a threshold may name.
METRICS = ("example_count", "accuracy", "loss")
BOUNDS = ("lower_bound", "upper_bound")


def run(
    *,
    examples: Examples,
    schema: Schema,
    model: Model,
    evaluation: ModelEvaluation,
    blessing: ModelBlessing,
    split: str = "test",
    batch_size: int = 256,
    thresholds: dict[str, dict[str, float]] | None = None,
) -> dict[str, Any]:
    """Evaluates `model` on `split`, writes `evaluation/metrics.json` and the blessing.

    Loss is the sparse categorical crossentropy averaged over examples; per-class
    accuracy is the recall of each class (correct / count among examples of that label).
    """
    thresholds = thresholds or {}
    check_thresholds(thresholds)
    if split not in examples.splits:
        raise ValueError(f"the Examples have no split {split!r} (splits: {', '.join(examples.splits) or 'none'})")
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")

    parsed_schema = load_schema(schema.file)
    low, high = int_domain(parsed_schema, LABEL_FEATURE)
    if low != 0:
        raise ValueError(f"labels must be class indices starting at 0; the schema's label domain is {low}..{high}")
    dataset = make_dataset(
        examples.split_files(split), feature_spec(parsed_schema), batch_size=batch_size,
        image_feature=IMAGE_FEATURE, label_feature=LABEL_FEATURE,
        image_shape=image_shape(parsed_schema, IMAGE_FEATURE), cache=False,
    )  # fmt: skip
    keras_model = keras.models.load_model(model.keras_file)
    metrics = evaluate(keras_model, dataset, num_classes=high + 1)
    metrics = {"split": split, **metrics}
    evaluation.write_json("metrics.json", metrics)
    log.info(
        "evaluate: %s split, %d examples: accuracy=%.4f loss=%.4f",
        split, metrics["example_count"], metrics["accuracy"], metrics["loss"],
    )  # fmt: skip

    checks = [
        {
            "metric": metric,
            "value": metrics[metric],
            "bound": bound,
            "threshold": threshold,
            "passed": bool(metrics[metric] >= threshold if bound == "lower_bound" else metrics[metric] <= threshold),
        }
        for metric, bounds in sorted(thresholds.items())
        for bound, threshold in sorted(bounds.items())
    ]
    blessed = all(check["passed"] for check in checks)
    blessing.set_blessed(blessed, checks)
    for check in checks:
        relation = ">=" if check["bound"] == "lower_bound" else "<="
        log.info(
            "evaluate: %s %s %.4f %s %g: %s",
            "check" if check["passed"] else "FAILED check",
            check["metric"], check["value"], relation, check["threshold"], "passed" if check["passed"] else "failed",
        )  # fmt: skip
    log.info("evaluate: %s (%d checks)", "BLESSED" if blessed else "NOT BLESSED", len(checks))
    return {"accuracy": metrics["accuracy"], "loss": metrics["loss"], "blessed": blessed}


def evaluate(keras_model: keras.Model, dataset: Any, num_classes: int) -> dict[str, Any]:
    """Example count, mean crossentropy, accuracy and per-class accuracy of a probability-output model.

    `dataset` yields `(images, labels)` batches; it is streamed, one batch in memory at a time.
    """
    counts = np.zeros(num_classes, dtype=np.int64)
    correct = np.zeros(num_classes, dtype=np.int64)
    loss_sum = 0.0
    for images, labels in dataset.as_numpy_iterator():
        if labels.size and (labels.min() < 0 or labels.max() >= num_classes):
            raise ValueError(
                f"a label is outside the schema's domain 0..{num_classes - 1}: {labels.min()}..{labels.max()}"
            )
        probabilities = np.asarray(keras_model.predict_on_batch(images), dtype=np.float64)
        loss_sum += float(np.sum(crossentropy(probabilities, labels)))
        hits = probabilities.argmax(axis=1) == labels
        counts += np.bincount(labels, minlength=num_classes)
        correct += np.bincount(labels[hits], minlength=num_classes)
    total = int(counts.sum())
    if total == 0:
        raise ValueError("the split holds no examples")
    return {
        "example_count": total,
        "accuracy": float(correct.sum() / total),
        "loss": loss_sum / total,
        "per_class_accuracy": {
            str(label): (float(correct[label] / counts[label]) if counts[label] else None)
            for label in range(num_classes)
        },
        "per_class_count": {str(label): int(counts[label]) for label in range(num_classes)},
    }


def crossentropy(probabilities: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Per-example sparse categorical crossentropy, with Keras' clipping of probabilities to [eps, 1 - eps]."""
    epsilon = keras.config.epsilon()
    picked = probabilities[np.arange(len(labels)), labels]
    return -np.log(np.clip(picked, epsilon, 1.0 - epsilon))


def check_thresholds(thresholds: Any) -> None:
    """Raises ValueError unless `thresholds` looks like {metric: {"lower_bound" | "upper_bound": number}}."""
    if not isinstance(thresholds, dict):
        raise ValueError(f"thresholds must be a mapping of metric name to bounds, got {thresholds!r}")
    for metric, bounds in thresholds.items():
        if metric not in METRICS:
            raise ValueError(f"threshold on unknown metric {metric!r}; metrics with thresholds: {', '.join(METRICS)}")
        if not isinstance(bounds, dict) or not bounds:
            raise ValueError(f"threshold {metric!r} must be a non-empty mapping such as {{'lower_bound': 0.9}}")
        for bound, value in bounds.items():
            if bound not in BOUNDS:
                raise ValueError(f"threshold {metric!r} has unknown bound {bound!r}; use lower_bound or upper_bound")
            if isinstance(value, bool) or not isinstance(value, Real):
                raise ValueError(f"threshold {metric}.{bound} must be a number, got {value!r}")
