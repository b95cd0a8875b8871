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

from tensorflow_metadata.proto.v0 import statistics_pb2

from kflow.components.util.drift import compare
from kflow.components.util.statistics_proto import common_stats, feature_stats, read_split
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
    new_split, old_split = read_split(newest, split), read_split(previous, split)
    features = compare(
        new_split,
        old_split,
        l_infinity_threshold=l_infinity_threshold,
        jensen_shannon_threshold=jensen_shannon_threshold,
    )
    drifted = [feature for feature in features if feature.drifted]
    # A column one span holds and the other does not (a user trial's span without `Job`: trained on with half of
    # it missing, said nowhere): the most a column can drift, said as TFDV's dropped or new column.
    gone, added = _held(old_split) - _held(new_split), _held(new_split) - _held(old_split)
    presence = [(name, f"in span {spans[1]}, in no record of span {spans[0]}") for name in sorted(gone)]
    presence += [(name, f"in span {spans[0]}, in no record of span {spans[1]}") for name in sorted(added)]
    # A column of numbers in one span and of text in the other (a code exported as its name): its values are no
    # longer comparable, and the union holds both as text (span_union/merged_schema.py). Whole numbers in one span
    # and decimals in the other are one quantity, not drift.
    retyped = _retyped(old_split, new_split)
    presence += [(name, f"{was} in span {spans[1]}, {now} in span {spans[0]}") for name, (was, now) in retyped.items()]
    message = ""
    if drifted or presence:
        shown = "; ".join([f"{feature.feature}: {feature.describe()}" for feature in drifted]
                          + [f"{name}: {said}" for name, said in presence])  # fmt: skip
        message = f"span {spans[0]} drifted from span {spans[1]} in {len(drifted) + len(presence)} feature(s): {shown}"
        log.warning("validate: %s (on_drift: %s)", message, on_drift)
    else:
        log.info("validate: span %s against span %s: no feature drifted", spans[0], spans[1])
    return {
        "spans": list(spans),
        "split": split,
        "features": [feature.to_json() for feature in features],
        "drifted": [feature.feature for feature in drifted] + [name for name, _ in presence],
        "presence": [
            {
                "feature": name,
                "description": said,
                "dropped": name in gone,
                "now": retyped[name][1] if name in retyped else None,
            }
            for name, said in presence
        ],
        "on_drift": on_drift,
        "blocking": bool(drifted or presence) and on_drift == "fail",
        "message": message,
    }


def _retyped(old_split: Any, new_split: Any) -> dict[str, tuple[str, str]]:
    """{feature: (what it held in the previous span, in the newest)} of the features numbers in one and text in the
    other."""
    kinds = [{name: _TEXT.get(feature.type, "numbers") for name, feature in feature_stats(split).items()
              if common_stats(feature).num_non_missing} for split in (old_split, new_split)]  # fmt: skip
    return {name: (kinds[0][name], kinds[1][name]) for name in sorted(kinds[0].keys() & kinds[1].keys())
            if kinds[0][name] != kinds[1][name]}  # fmt: skip


_TEXT = {statistics_pb2.FeatureNameStatistics.STRING: "text", statistics_pb2.FeatureNameStatistics.BYTES: "text"}


def _held(split: Any) -> set[str]:
    """The features some record of the split holds a value of."""
    return {name for name, feature in feature_stats(split).items() if common_stats(feature).num_non_missing}


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
    ] + [
        {
            "feature": entry["feature"],
            "kind": "span_drift",
            "description": entry["description"],
            "severity": "warning",
            "tfmd": _presence_kind(entry),
        }
        for entry in verdict.get("presence", [])
    ]


def _presence_kind(entry: dict[str, Any]) -> str:
    """TFDV's anomaly type of a presence entry: a dropped or new column, or a column's type changed."""
    if entry.get("now"):  # what a retyped column holds in the newest span
        return "STRING_TYPE_NOW_FLOAT" if entry["now"] == "numbers" else "FLOAT_TYPE_STRING_NOT_FLOAT"
    return "SCHEMA_MISSING_COLUMN" if entry["dropped"] else "SCHEMA_NEW_COLUMN"
