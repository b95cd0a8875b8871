"""The built-in tabular transform: which analyzers a tabular schema needs, and the plan their results make.

The analyzers (components/transform/analyzers.py) are asked for what the tabular task used to count in memory in
every training process: per number its moments, per string its most frequent values and words, the label's
classes over every split and its training counts (or, for a regression, its moments). Their results go through
the same rules as the task's own pass (components/datasets/tabular/plan.py), so a transform changes where the
preprocessing is learnt, not what it is.
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any

from kflow.components.datasets.tabular.plan import (
    CODED_KINDS,
    DATE_SAMPLE,
    StringSummary,
    classification_head,
    label_text,
    numeric_spec,
    regression_head,
    string_spec,
    within_code_budget,
)
from kflow.components.transform.analyzers import Analyzer

log = logging.getLogger("kflow.transform")
NUMERIC = ("int", "float", "bool")


def tabular_analyzers(task: Any) -> tuple[list[Analyzer], dict[str, str]]:
    """(the analyzers of a TabularTask's features and label, {column: how records are parsed for it})."""
    options = task.options
    analyzers, columns = [], {}
    for name, kind in task.types.items():
        if kind in NUMERIC:
            analyzers.append(Analyzer(f"moments.{name}", "moments", name))
            columns[name] = "number"
        else:
            top = int(options["max_categories"]) + DATE_SAMPLE
            analyzers.append(Analyzer(f"vocabulary.{name}", "vocabulary", name, {"top_k": top}))
            analyzers.append(Analyzer(f"words.{name}", "words", name, {"top_k": int(options["max_tokens"])}))
            columns[name] = "string"
    labels, label_columns = label_analyzers(task)
    return [*analyzers, *labels], {**columns, **label_columns}


def label_analyzers(task: Any) -> tuple[list[Analyzer], dict[str, str]]:
    """The label's: a regression's moments, or the classes over every split and their training counts."""
    if task.kind == "regression":
        return [Analyzer("label.moments", "moments", task.label)], {task.label: "number"}
    classes = Analyzer("label.classes", "classes", task.label, splits="all")
    return [classes, Analyzer("label.counts", "counts", task.label)], {task.label: "label"}


def tabular_plan(task: Any, results: dict[str, Any]) -> dict[str, Any]:
    """{"label", "features", "head", "left_out", "inputs"}: the task's preprocessing, from the analyzers' results."""
    features, rows, spans = [], training_rows(task, results), getattr(task, "spans", {})
    for name, kind in task.types.items():
        if kind in NUMERIC:
            moments = results[f"moments.{name}"]
            codes = moments.get("codes") if kind in CODED_KINDS else None
            count, mean, variance = moments["count"], moments["mean"], moments["variance"]
            features.append(numeric_spec(name, count, mean, variance, codes, rows, spans.get(name)))
        else:
            values, words = results[f"vocabulary.{name}"], results[f"words.{name}"]
            summary = StringSummary(
                seen=values["seen"],
                distinct=values["distinct"],
                chars=values["chars"],
                spaced=values["spaced"],
                ranked=[tuple(pair) for pair in values["ranked"]],
                words=[tuple(pair) for pair in words["ranked"]],
                day_first=values.get("day_first", False),
            )
            features.append(string_spec(name, summary, task.options, rows, spans.get(name)))
    features = within_code_budget(features)
    left_out = {spec["name"]: spec["left_out"] for spec in features if spec["kind"] == "left_out"}
    for name, why in left_out.items():
        log.info("transform: the feature %r is left out: %s", name, why)
    features = [spec for spec in features if spec["kind"] != "left_out"]
    if not features:
        raise ValueError(f"no feature is left to learn from: {', '.join(f'{n!r} ({w})' for n, w in left_out.items())}")
    inputs = {spec["name"]: task.types[spec["name"]] for spec in features}
    head = label_head(task, results)
    return {"label": task.label, "features": features, "head": head, "left_out": left_out, "inputs": inputs}


def training_rows(task: Any, results: dict[str, Any]) -> int:
    """The training split's records: each has its label (the ingest filters the unlabelled)."""
    if task.kind == "regression":
        return int(results["label.moments"]["count"])
    return sum(count for _, count in results["label.counts"]["ranked"])


def label_head(task: Any, results: dict[str, Any]) -> dict[str, Any]:
    """The model's head from the label's analyzers: the classes and their weights, or a regression's scale."""
    if task.kind == "regression":
        moments = results["label.moments"]
        if not moments["count"]:
            raise ValueError("the training split is empty")
        return regression_head(moments["mean"], moments["variance"] ** 0.5)
    counts = Counter({label_text(value): count for value, count in results["label.counts"]["ranked"]})
    if not counts:
        raise ValueError("the training split is empty")
    classes = [label_text(value) for value in sorted(results["label.classes"])]
    if len(classes) < 2:
        raise ValueError(f"classification needs at least two classes; the label {task.label!r} has {classes}")
    if unseen := [name for name in classes if not counts[name]]:  # in the eval or test split alone
        shown = ", ".join(map(repr, unseen[:8])) + (", …" if len(unseen) > 8 else "")
        said = "%d class(es) of %r have no training record, only eval or test ones: %s"
        log.warning(f"transform: {said} (the model learns none of them; its metrics count them as misses)",
                    len(unseen), task.label, shown)  # fmt: skip
    return classification_head(classes, counts, task.options["class_weighting"])
