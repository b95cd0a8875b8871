"""Drift between the newest span and the previous one: TFDV's comparators (components/util/drift.py) over the
two spans' Split-train statistics, with the thresholds of `data.drift`.

The verdict goes into anomalies.json under `drift` ({"spans": [newest, previous], "features": [...], "drifted":
[names], "on_drift", "blocking", "message"}) and each drifted feature into Split-train's SchemaDiff.pb as a
COMPARATOR_L_INFTY_HIGH or COMPARATOR_JENSEN_SHANNON_DIVERGENCE_HIGH anomaly. `on_drift: fail` makes it blocking:
the Trainer refuses to train; `warn` reports it and trains.
"""

from __future__ import annotations

import logging
from typing import Any

from kflow.components.util.drift import compare
from kflow.components.util.statistics_proto import read_split
from kflow.pipeline.dsl.artifacts import ExampleStatistics

log = logging.getLogger(__name__)

ON_DRIFT = ("fail", "warn")
TFMD = {"l_infinity": "COMPARATOR_L_INFTY_HIGH", "jensen_shannon": "COMPARATOR_JENSEN_SHANNON_DIVERGENCE_HIGH"}


def span_drift(
    newest: ExampleStatistics,
    previous: ExampleStatistics,
    spans: list[str],
    *,
    on_drift: str,
    l_infinity_threshold: float,
    jensen_shannon_threshold: float,
) -> dict[str, Any]:
    """The drift verdict of the newest span (spans[0]) against the previous one (spans[1])."""
    if on_drift not in ON_DRIFT:
        raise ValueError(f"data.on_drift: must be fail or warn, got {on_drift!r}")
    split = "train" if "train" in newest.splits and "train" in previous.splits else newest.splits[0]
    features = compare(
        read_split(newest, split),
        read_split(previous, split),
        l_infinity_threshold=l_infinity_threshold,
        jensen_shannon_threshold=jensen_shannon_threshold,
    )
    drifted = [feature for feature in features if feature.drifted]
    message = ""
    if drifted:
        shown = "; ".join(f"{feature.feature}: {feature.describe()}" for feature in drifted)
        message = f"span {spans[0]} drifted from span {spans[1]} in {len(drifted)} feature(s): {shown}"
        log.warning("validate: %s (on_drift: %s)", message, on_drift)
    else:
        log.info("validate: span %s against span %s: no feature drifted", spans[0], spans[1])
    return {
        "spans": list(spans),
        "split": split,
        "features": [feature.to_json() for feature in features],
        "drifted": [feature.feature for feature in drifted],
        "on_drift": on_drift,
        "blocking": bool(drifted) and on_drift == "fail",
        "message": message,
    }


def drift_anomalies(verdict: dict[str, Any]) -> list[dict[str, Any]]:
    """The drifted features as anomaly entries of the compared split (warnings: `on_drift`, not the severity,
    decides whether they block)."""
    return [
        {
            "feature": entry["feature"],
            "kind": "span_drift",
            "description": f"{entry['comparator'].replace('_', '-')} {entry['distance']:.3f} from span "
            f"{verdict['spans'][1]} is above {entry['threshold']:g}",
            "severity": "warning",
            "tfmd": TFMD[entry["comparator"]],
            "distance": entry["distance"],
            "threshold": entry["threshold"],
        }
        for entry in verdict["features"]
        if entry["drifted"]
    ]
