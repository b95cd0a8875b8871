"""The blessing gate: value thresholds and change thresholds against a baseline model.

Thresholds, per metric (any of the task's scalar metrics), TFMA-like:

    thresholds:
      accuracy: {lower_bound: 0.98, max_drop: 0.002}   # value ≥ 0.98 and ≥ baseline - 0.002
      loss: {upper_bound: 0.1, max_rise: 0.01}           # value ≤ 0.1 and ≤ baseline + 0.01

`lower_bound`/`upper_bound` bound the value; `max_drop`/`max_rise` bound the change against
the baseline model's value of the same metric on the same split; `min_gain`/`min_reduction`
ask for a strict improvement on it (value > baseline + min_gain, value < baseline - min_reduction),
so of two models that compare each other with `max_drop: 0` and `min_gain: 0`, exactly one passes.
Without a baseline (the first model of a pipeline) the change checks pass, marked `"baseline": null`, as TFMA does.
"""

from __future__ import annotations

from numbers import Real
from typing import Any

VALUE_BOUNDS = ("lower_bound", "upper_bound")
CHANGE_BOUNDS = ("max_drop", "max_rise", "min_gain", "min_reduction")
BOUNDS = VALUE_BOUNDS + CHANGE_BOUNDS


def check_thresholds(thresholds: Any, metrics: tuple[str, ...] | list[str], per_class: tuple[str, ...] = ()) -> None:
    """Raises ValueError unless `thresholds` is {metric: {bound: number}} over `metrics` (or `<per_class>.<class>`)
    and BOUNDS."""
    if not isinstance(thresholds, dict):
        raise ValueError(f"thresholds must be a mapping of metric name to bounds, got {thresholds!r}")
    for metric, bounds in thresholds.items():
        top, dot, key = metric.partition(".")
        if metric not in metrics and not (dot and key and top in per_class):
            raise ValueError(f"threshold on unknown metric {metric!r}; metrics with thresholds: {', '.join(metrics)}")
        if not isinstance(bounds, dict) or not bounds:
            raise ValueError(f"threshold {metric!r} must be a non-empty mapping such as {{'lower_bound': 0.9}}")
        for bound, value in bounds.items():
            if bound not in BOUNDS:
                raise ValueError(f"threshold {metric!r} has unknown bound {bound!r}; use {', '.join(BOUNDS)}")
            if isinstance(value, bool) or not isinstance(value, Real):
                raise ValueError(f"threshold {metric}.{bound} must be a number, got {value!r}")
            if bound in CHANGE_BOUNDS and value < 0:
                raise ValueError(f"threshold {metric}.{bound} must be ≥ 0, got {value!r}")


def run_checks(
    thresholds: dict[str, dict[str, float]], metrics: dict[str, Any], baseline: dict[str, Any] | None
) -> list[dict[str, Any]]:
    """One check a (metric, bound): {metric, value, bound, threshold, passed} (+ baseline, change for changes)."""
    checks = []
    for metric, bounds in sorted(thresholds.items()):
        value = metric_value(metrics, metric)
        for bound, threshold in sorted(bounds.items()):
            check: dict[str, Any] = {"metric": metric, "value": value, "bound": bound, "threshold": threshold}
            if value is None:
                check["passed"] = False
                check["reason"] = "the metric is undefined on this split"
            elif bound == "lower_bound":
                check["passed"] = bool(value >= threshold)
            elif bound == "upper_bound":
                check["passed"] = bool(value <= threshold)
            else:
                reference = None if baseline is None else metric_value(baseline, metric)
                check["baseline"] = reference
                if reference is None:
                    check["passed"] = True
                    check["reason"] = "no baseline model: the change check does not apply"
                else:
                    change = check["change"] = value - reference
                    check["passed"] = bool(
                        {
                            "max_drop": change >= -threshold,
                            "max_rise": change <= threshold,
                            "min_gain": change > threshold,
                            "min_reduction": change < -threshold,
                        }[bound]
                    )
            checks.append(check)
    return checks


def metric_value(metrics: dict[str, Any], name: str) -> Any:
    """A metric by name: a scalar, or one class's of a per-class mapping (`per_class_recall.Yes`)."""
    top, dot, key = name.partition(".")
    if dot and isinstance(metrics.get(top), dict):
        return metrics[top].get(key)
    return metrics.get(name)


def describe(check: dict[str, Any]) -> str:
    """One line: 'accuracy 0.9512 >= 0.98: failed' or 'accuracy change -0.0100 (0.95 vs baseline 0.96) >= -0.002'."""
    verdict = "passed" if check["passed"] else "FAILED"
    value = check["value"]
    if check["bound"] == "required":
        return f"{check['reason']}: {verdict}"
    if value is None:
        return f"{check['metric']} undefined ({check['bound']} {check['threshold']:g}): {verdict}"
    if check["bound"] in VALUE_BOUNDS:
        relation = ">=" if check["bound"] == "lower_bound" else "<="
        return f"{check['metric']} {value:.4f} {relation} {check['threshold']:g}: {verdict}"
    if check.get("baseline") is None:
        return f"{check['metric']} {check['bound']} {check['threshold']:g}: no baseline, {verdict}"
    relation = {"max_drop": ">= -", "max_rise": "<= +", "min_gain": "> +", "min_reduction": "< -"}[check["bound"]]
    relation += f"{check['threshold']:g}"
    return (
        f"{check['metric']} change {check['change']:+.4f} ({value:.4f} vs baseline {check['baseline']:.4f}) "
        f"{relation}: {verdict}"
    )
