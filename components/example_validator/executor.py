"""ExampleValidator's executor: every split's statistics checked against the schema → an anomalies artifact.

Checks, per feature, with the TFMD anomaly type each is recorded as in `Split-<split>/SchemaDiff.pb`:

    missing_feature     required (presence min_fraction 1) and absent    SCHEMA_MISSING_COLUMN
    missing_values      required, but some examples lack it              FEATURE_TYPE_LOW_FRACTION_PRESENT
    unexpected_feature  in the data, not in the schema                   SCHEMA_NEW_COLUMN
    type_mismatch       another type than the schema's                   UNKNOWN_TYPE
    unknown_category    string values outside the string_domain          ENUM_TYPE_UNEXPECTED_STRING_VALUES
    out_of_range        numbers outside int_domain / float_domain        INT_TYPE_BIG_INT, FLOAT_TYPE_SMALL_FLOAT, ...
    drift               the L-infinity distance between the split's and
                        Split-train's value frequencies is above the
                        feature's drift_comparator threshold             COMPARATOR_L_INFTY_HIGH

L-infinity distance: the largest difference, over the values, between the share of examples
holding a value in one split and in the other (0: same distribution; 1: disjoint). The
threshold lives in the schema (SchemaGen sets `max_category_drift`, 0.25 by default: small
splits of a few hundred rows differ by several points by chance; TFDV's guides use 0.01-0.1
for large, stable data).

Severity (TFMD's AnomalyInfo.severity): the structural anomalies (missing_feature, missing_values,
unexpected_feature, type_mismatch) are errors, but for a feature absent from a split that train holds
so rarely that a split of that size misses it by chance (1 in 1,000 or more): a warning.
unknown_category, out_of_range and drift are errors
against a frozen schema (one without SchemaGen's `kflow_inferred` tag: the user's rules) and, for
unknown_category, wherever the share of values inside the domain falls below the feature's
`distribution_constraints.min_domain_mass` (TFDV's knob). Against an inferred schema they are
warnings: counted and reported, never blocking, because that schema's domains and ranges describe
one sample of the data (an unseen comment, a label past the training maximum, a chance difference
between small splits are data, not a broken source).

Like TFX's ExampleValidator, the component itself always succeeds, so its anomalies are
published; `on_anomaly` (recorded in anomalies.json) tells its consumer what to do: the
Trainer refuses to train on data with blocking anomalies (errors) under `fail` and only warns under `warn`.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from tensorflow_metadata.proto.v0 import anomalies_pb2, schema_pb2, statistics_pb2

from kflow.components.example_validator.span_drift import drift_anomalies, span_drift
from kflow.components.util.drift import l_infinity
from kflow.components.util.schema import INFERRED_TAG, load_schema
from kflow.components.util.statistics_proto import common_stats, feature_stats, read_split, value_counts
from kflow.pipeline.dsl.artifacts import ExampleAnomalies, ExampleStatistics, Schema

log = logging.getLogger(__name__)

ON_ANOMALY = ("fail", "warn")
_STATS_TYPES = {
    statistics_pb2.FeatureNameStatistics.INT: schema_pb2.INT,
    statistics_pb2.FeatureNameStatistics.FLOAT: schema_pb2.FLOAT,
    statistics_pb2.FeatureNameStatistics.STRING: schema_pb2.BYTES,
    statistics_pb2.FeatureNameStatistics.BYTES: schema_pb2.BYTES,
}
_TFMD = {
    "missing_feature": "SCHEMA_MISSING_COLUMN",
    "missing_values": "FEATURE_TYPE_LOW_FRACTION_PRESENT",
    "unexpected_feature": "SCHEMA_NEW_COLUMN",
    "type_mismatch": "UNKNOWN_TYPE",
    "unknown_category": "ENUM_TYPE_UNEXPECTED_STRING_VALUES",
    "drift": "COMPARATOR_L_INFTY_HIGH",
}


def run(
    *,
    statistics: ExampleStatistics,
    schema: Schema,
    anomalies: ExampleAnomalies,
    on_anomaly: str = "fail",
    span_statistics: ExampleStatistics | None = None,
    previous_span_statistics: ExampleStatistics | None = None,
    on_drift: str = "warn",
    drift_spans: list[str] | None = None,
    l_infinity_threshold: float = 0.25,
    jensen_shannon_threshold: float = 0.1,
) -> dict[str, Any]:
    """Writes the anomalies of every split; returns {"anomalies": n, "blocking": b, "<split>": n_split}."""
    if on_anomaly not in ON_ANOMALY:
        raise ValueError(f"data.on_anomaly: must be fail or warn, got {on_anomaly!r}")
    proto = load_schema(schema.file)
    strict_domains = INFERRED_TAG not in proto.annotation.tag  # a frozen schema's domains are the user's rules
    splits = statistics.splits
    train = read_split(statistics, "train") if "train" in splits else None
    found = {split: find_anomalies(read_split(statistics, split), proto, train if split != "train" else None,
                                   strict_domains)
             for split in splits}  # fmt: skip
    drift = None
    if span_statistics is not None and previous_span_statistics is not None:
        drift = span_drift(span_statistics, previous_span_statistics, list(drift_spans or ["newest", "previous"]),
                           on_drift=on_drift, l_infinity_threshold=l_infinity_threshold,
                           jensen_shannon_threshold=jensen_shannon_threshold)  # fmt: skip
        found.setdefault(drift["split"], []).extend(drift_anomalies(drift))
    anomalies.path.mkdir(parents=True, exist_ok=True)
    for split, entries in found.items():
        path = anomalies.split_file(split)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(to_proto(entries).SerializeToString(deterministic=True))
    count = sum(len(entries) for entries in found.values())
    blocking = sum(entry["severity"] == "error" for entries in found.values() for entry in entries)
    message = ""
    if blocking:
        first = next(
            f"{split}: {e['feature']}: {e['description']}"
            for split, es in found.items()
            for e in es
            if e["severity"] == "error"
        )
        # No path here: this folder is published elsewhere; whoever quotes the message names the published file.
        message = (
            f"the Examples have {blocking} anomal{'y' if blocking == 1 else 'ies'} against the schema (first: {first})"
        )
    summary = {"count": count, "blocking": blocking, "on_anomaly": on_anomaly, "message": message, "splits": found}
    if drift is not None:
        summary["drift"] = drift
    anomalies.write_json("anomalies.json", summary)
    for split, entries in found.items():
        for entry in entries:
            if entry["severity"] == "error":
                log.warning("validate: %s: %s: %s", split, entry["feature"], entry["description"])
            else:  # a drift is a warning of the schema's, blocking the Trainer under on_drift: fail
                blocks = entry.get("kind") == "span_drift" and drift is not None and drift["blocking"]
                said = "drift, blocking: on_drift: fail" if blocks else "counted, not blocking"
                log.info("validate: %s: %s: %s (%s)", split, entry["feature"], entry["description"], said)
    if blocking:
        log.warning("validate: %s (on_anomaly: %s)", message, on_anomaly)
    result = {"anomalies": count, "blocking": blocking, **{split: len(entries) for split, entries in found.items()}}
    if drift is not None:
        result["drifted_features"] = len(drift["drifted"])
        result["drift_blocking"] = int(drift["blocking"])  # the Trainer refuses to train (on_drift: fail)
        # Each drifted feature's distance: a number of the summary, so MLflow logs it (validate.drift.<feature>).
        result.update({"drift." + re.sub(r"[^\w.-]", "_", entry["feature"]): round(entry["distance"], 4)
                       for entry in drift["features"] if entry["drifted"]})  # fmt: skip
    return result


ADVISORY = ("unknown_category", "out_of_range", "drift")  # warnings unless the domains are strict


def find_anomalies(
    split: statistics_pb2.DatasetFeatureStatistics,
    schema: schema_pb2.Schema,
    train: statistics_pb2.DatasetFeatureStatistics | None = None,
    strict_domains: bool = True,
) -> list[dict[str, Any]]:
    """The anomalies of one split: [{"feature", "kind", "description", "severity", ...}], in schema order."""
    stats, found = feature_stats(split), []
    baseline = feature_stats(train) if train is not None else {}

    def add(name: str, kind: str, description: str, error: bool | None = None, **details: Any) -> None:
        if error is None:
            error = strict_domains or kind not in ADVISORY
        severity = "error" if error else "warning"
        found.append({"feature": name, "kind": kind, "description": description, "severity": severity, **details})

    for feature in schema.feature:
        name = feature.name
        required = feature.presence.min_fraction >= 1.0
        if name not in stats:
            if (required or feature.presence.min_count >= 1) and split.num_examples:
                # A feature train holds in a few rows can be absent from a small split by chance: an error only when
                # its absence is improbable (under 1 in 1,000 were the split drawn like train), a broken source.
                share = _present_share(baseline.get(name), train)
                chance = (1.0 - share) ** split.num_examples if share is not None else 0.0
                add(name, "missing_feature", "the schema expects it and no example of the split has it",
                    error=required or chance < 1e-3)  # fmt: skip
            continue
        observed = stats[name]
        common = common_stats(observed)
        if required and common.num_missing:
            add(name, "missing_values", f"{common.num_missing} of {split.num_examples} examples lack it",
                missing=int(common.num_missing))  # fmt: skip
        if _STATS_TYPES[observed.type] != feature.type:
            expected, got = (
                schema_pb2.FeatureType.Name(feature.type),
                schema_pb2.FeatureType.Name(_STATS_TYPES[observed.type]),
            )
            add(name, "type_mismatch", f"values are {got}, the schema says {expected}")
            continue
        if feature.HasField("string_domain"):
            counts = value_counts(observed)
            unknown = sorted(set(counts) - set(feature.string_domain.value))
            if unknown:
                share = sum(counts[value] for value in unknown) / max(common.tot_num_values, 1)
                shown = ", ".join(repr(value) for value in unknown[:5]) + (" …" if len(unknown) > 5 else "")
                mass = feature.distribution_constraints.min_domain_mass if feature.HasField(
                    "distribution_constraints") else None  # fmt: skip
                below_mass = mass is not None and 1.0 - share < mass
                add(name, "unknown_category", f"values not in the schema's domain: {shown} ({share:.1%} of values)",
                    error=True if below_mass else None, values=unknown[:20], fraction=share)  # fmt: skip
        for domain, kind in (("int_domain", "INT"), ("float_domain", "FLOAT")):
            if feature.HasField(domain) and common.num_non_missing:
                bounds = getattr(feature, domain)
                low, high = observed.num_stats.min, observed.num_stats.max
                if bounds.HasField("min") and low < bounds.min:
                    add(name, "out_of_range", f"minimum {low:g} is below the schema's {bounds.min:g}",
                        tfmd=f"{kind}_TYPE_SMALL_{kind}", value=low, bound=bounds.min)  # fmt: skip
                if bounds.HasField("max") and high > bounds.max:
                    add(name, "out_of_range", f"maximum {high:g} is above the schema's {bounds.max:g}",
                        tfmd=f"{kind}_TYPE_BIG_{kind}", value=high, bound=bounds.max)  # fmt: skip
        threshold = feature.drift_comparator.infinity_norm.threshold
        if threshold and name in baseline and observed.HasField("string_stats"):
            distance, value = l_infinity(value_counts(observed), value_counts(baseline[name]))
            if distance > threshold:
                add(name, "drift", f"L-infinity distance {distance:.3f} to Split-train (value {value!r}) is above "
                    f"the threshold {threshold:g}", distance=distance, threshold=threshold)  # fmt: skip
    known = {feature.name for feature in schema.feature}
    for name in sorted(set(stats) - known):
        add(name, "unexpected_feature", "the data has it and the schema does not")
    return found


def _present_share(observed: Any, train: statistics_pb2.DatasetFeatureStatistics | None) -> float | None:
    """The share of Split-train's examples holding the feature; None without Split-train's statistics."""
    if observed is None or train is None or not train.num_examples:
        return None
    return common_stats(observed).num_non_missing / train.num_examples


def to_proto(entries: list[dict[str, Any]]) -> anomalies_pb2.Anomalies:
    proto = anomalies_pb2.Anomalies()
    for entry in entries:
        info = proto.anomaly_info[entry["feature"]]
        info.path.step.append(entry["feature"])
        error = entry.get("severity", "error") == "error" or info.severity == anomalies_pb2.AnomalyInfo.ERROR
        info.severity = anomalies_pb2.AnomalyInfo.ERROR if error else anomalies_pb2.AnomalyInfo.WARNING
        info.short_description = entry["kind"] if not info.short_description else "multiple anomalies"
        info.description = "; ".join(filter(None, [info.description, entry["description"]]))
        reason = info.reason.add()
        reason.type = anomalies_pb2.AnomalyInfo.Type.Value(entry.get("tfmd") or _TFMD[entry["kind"]])
        reason.short_description = entry["kind"]
        reason.description = entry["description"]
    return proto
