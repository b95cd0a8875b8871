"""Evaluator executor: streams one split through the model, computes the task's metrics over slices,
compares them with thresholds and with a baseline model, writes the blessing, the plots and a report.

Artifacts written:
    evaluation/metrics.json      the task's metrics, `slices` {slice: {key: metrics}}, `baseline` metrics
    evaluation/kfp_metrics.json  {"scalars": {name: number}, "confusion_matrix": {categories, matrix}, "roc": …}
                                 for KFP's Metrics / ClassificationMetrics artifacts
    evaluation/serving_check.json  the serving SavedModel's outputs against model.keras's (serving_check.py)
    evaluation/report.html       one self-contained page: verdict, metrics beside the baseline's, checks, what
                                 the model was trained with, per-class and slice tables, plots (inline SVG; also
                                 as *.png and *.svg), the training run
    evaluation/statistics.html   the data's statistics page, anomalies marked (with the `statistics` input)
    blessing/BLESSED | NOT_BLESSED, blessing.json {"blessed", "checks": [...], "baseline_model",
                                 "no_baseline" (why there is none), "model_module_digest" (the sha256 of the
                                 model's user module, checked before it runs as a later run's baseline)}
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np

from kflow.components.datasets import get_dataset
from kflow.components.datasets.metrics import TaskMetrics, subset
from kflow.components.datasets.task import Task, task_for_model
from kflow.components.datasets.user_module import MODULE_FILE
from kflow.components.evaluator.caveats import caveats
from kflow.components.evaluator.gate import check_thresholds, describe, run_checks
from kflow.components.evaluator.model_inputs import OtherInputs, check_inputs
from kflow.components.evaluator.provenance import trained_with
from kflow.components.evaluator.report import write_report
from kflow.components.evaluator.serving_check import REPORT as SERVING_REPORT
from kflow.components.evaluator.serving_check import ServingClient, ServingSample, as_check
from kflow.components.evaluator.slice_order import class_names, in_natural_order
from kflow.components.models import load_trained
from kflow.components.util import plots
from kflow.components.util.corrupt_examples import reads_examples
from kflow.components.util.input_autotune import untuned
from kflow.components.util.predictions import TASK_INFERRED, predicting
from kflow.components.util.predictions import class_names as predicted_classes
from kflow.components.util.statistics_page import statistics_page
from kflow.components.util.statistics_proto import read_split
from kflow.pipeline.dsl.artifacts import (
    ExampleAnomalies,
    Examples,
    ExampleStatistics,
    Model,
    ModelBlessing,
    ModelEvaluation,
    ModelRun,
    Schema,
)

log = logging.getLogger("kflow.evaluator")


@reads_examples
def run(
    *,
    examples: Examples,
    schema: Schema,
    model: Model,
    evaluation: ModelEvaluation,
    blessing: ModelBlessing,
    model_run: ModelRun | None = None,
    statistics: ExampleStatistics | None = None,
    anomalies: ExampleAnomalies | None = None,
    previous_statistics: ExampleStatistics | None = None,
    split: str = "test",
    batch_size: int = 256,
    thresholds: dict[str, dict[str, float]] | None = None,
    slices: list[dict[str, Any]] | None = None,
    baseline_model_uri: str | None = None,
    baseline_model: Model | None = None,
    baseline_module_digest: str | None = None,
    no_baseline_reason: str | None = None,
    require_baseline: bool = False,
    report_title: str | None = None,
    seed: int = 0,
    eval_split: str = "eval",
) -> dict[str, Any]:
    """Evaluates `model` (and the baseline model, if any) on `split`; writes metrics, report and blessing.

    `slices`: [{"by": "label"} | {"by": "length", "boundaries": [20, 40, 80]}]; `seed` fixes the
    task's evaluation randomness (the MLM masks). Returns the summary `kflow show` prints.
    """
    thresholds, slices = thresholds or {}, slices or []
    if baseline_model is not None:
        if baseline_model_uri:
            raise ValueError("give the baseline as the baseline_model input or as baseline_model_uri, not both")
        baseline_model_uri = baseline_model.uri
    # The dataset and the task options come with the model, so its data is read as in training.
    task = model.task_spec["dataset"]
    metrics_class = get_dataset(task).metrics_class()
    check_thresholds(thresholds, list(metrics_class.SCALARS), metrics_class.PER_CLASS)
    _check_slices(slices, metrics_class)
    if split not in examples.splits:
        raise ValueError(f"the Examples have no split {split!r} (splits: {', '.join(examples.splits) or 'none'})")
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    if metrics_class.needs_eval_pass and eval_split not in examples.splits:
        raise ValueError(f"the {task} metrics choose a threshold on the {eval_split!r} split, which the Examples lack")
    # The serving check's client loads the SavedModel while this process evaluates (serving_check.py).
    with ServingClient(model) as client:
        measure = _Measure(task, metrics_class, schema, examples, split, eval_split, batch_size, seed)
        sample = ServingSample(client)
        overall, by_slice = measure(model, slices, sample)
        metrics = {"split": split, "dataset": task, "seed": seed, **overall.result()}
        classes = class_names(metrics)  # Slices in their natural order: buckets by value, classes as the model's.
        metrics["slices"] = {
            name: {key: accumulator.result() for key, accumulator in in_natural_order(keys, classes).items()}
            for name, keys in by_slice.items()
        }
        baseline_metrics = None
        if baseline_model_uri:
            baseline_model = Model(baseline_model_uri)
            if not baseline_model.keras_file.exists():
                raise ValueError(f"the baseline model {baseline_model_uri} has no {baseline_model.keras_file.name}")
            check_baseline_code(baseline_model, baseline_module_digest)
            other = _other_classes(task, schema, model, baseline_model)
            if other:  # new data brought a class, or the label was read otherwise: no comparison to make
                baseline_model_uri, no_baseline_reason = None, other
            else:
                try:
                    baseline_overall, _ = measure(baseline_model, [])
                except OtherInputs as error:  # trained on other columns or image sizes: no comparison to make
                    no_baseline_reason = f"the baseline model {baseline_model_uri} {error.reads}"
                    baseline_model_uri = None
                else:
                    baseline_metrics = baseline_overall.result()
                    metrics["baseline"] = {"model": baseline_model_uri, **_scalars(baseline_metrics)}
        evaluation.write_json("metrics.json", metrics)
        log.info("evaluate: %s split, %d examples: %s", split, metrics["example_count"], _scalars(overall.result()))
        for caveat in caveats(metrics, _mean_error(overall) if "r2" in metrics else None):
            log.warning("evaluate: %s", caveat)

        checks = run_checks(thresholds, metrics, baseline_metrics)
        no_baseline = None if baseline_model_uri else (no_baseline_reason or "none was given")
        if baseline_metrics is not None:  # the comparison a warm start or a new span is judged by, said whether or not
            headline = overall.HEADLINE  # a threshold checks it (max_drop: 0 makes it one)
            if isinstance(baseline_metrics.get(headline), float) and isinstance(metrics.get(headline), float):
                log.info("evaluate: %s %.4f, the baseline's %.4f on the same examples (%s)", headline,
                         metrics[headline], baseline_metrics[headline], baseline_model_uri)  # fmt: skip
        if no_baseline:
            log.info("evaluate: no baseline: %s", no_baseline)
            if require_baseline:
                checks.append(baseline_required(no_baseline))
        sample.send()
        scalars = _scalars(metrics)
        evaluation.write_json(evaluation.kfp_metrics_path.name, {"scalars": scalars, **overall.kfp_metrics()})
        history = model_run.history if model_run is not None and (model_run.path / "history.json").exists() else {}
        figures = [
            *plots.training_curves(history.get("per_epoch") or [], evaluation.path),
            *overall.plots(evaluation.path),
            *plots.slice_bars(metrics["slices"], overall.HEADLINE, evaluation.path),
        ]
        serving = client.result(sample.expected(), sample.low_precision())
        evaluation.write_json(SERVING_REPORT, serving)
        checks.append(as_check(serving))
        blessed = all(check["passed"] for check in checks)
        blessing.set_blessed(
            blessed,
            checks,
            baseline_model=baseline_model_uri or None,
            no_baseline=no_baseline,
            model_module_digest=model.module_digest,
        )
        for check in checks:
            log.info("evaluate: check %s", describe(check))
        log.info("evaluate: %s (%d check%s)", "BLESSED" if blessed else "NOT BLESSED", len(checks),
                 "" if len(checks) == 1 else "s")  # fmt: skip

        write_report(
            evaluation.path / "report.html",
            task=task,
            metrics=metrics,
            checks=checks,
            blessed=blessed,
            figures=figures,
            data=examples.stats if (examples.path / "stats.json").exists() else None,
            training={key: value for key, value in history.items() if key != "per_epoch"},
            links=_links(examples, model_run),
            title=report_title,
            provenance=trained_with(model, model_run, examples),
            statistics_page=_statistics_page(evaluation, statistics, anomalies, previous_statistics, report_title),
        )

    summary: dict[str, Any] = {
        key: scalars[key] for key in metrics_class.SCALARS if key in scalars and key != "example_count"
    }
    summary["blessed"] = blessed
    summary["headline"] = overall.HEADLINE  # An instance may choose it (tabular: accuracy or rmse).
    failed = [describe(check) for check in checks if not check["passed"]]
    if failed:
        summary["failed_checks"] = failed
    if baseline_model_uri:
        summary["baseline_model"] = baseline_model_uri
    else:
        summary["no_baseline"] = no_baseline
    return summary


def check_baseline_code(baseline: Model, recorded_digest: str | None) -> None:
    """A baseline's user module is code: it runs only as it was when the baseline was blessed."""
    digest = baseline.module_digest
    if digest is None or digest == recorded_digest:
        return
    if recorded_digest is None:
        log.warning("evaluate: the baseline %s runs a user module with no recorded digest", baseline.uri)
        return
    raise ValueError(
        f"the baseline model {baseline.uri}: assets/{MODULE_FILE} changed since it was blessed "
        f"(sha256 {digest[:12]}…, blessed with {recorded_digest[:12]}…); refusing to run it"
    )


def baseline_required(reason: str) -> dict[str, Any]:
    return {
        "metric": "baseline",
        "bound": "required",
        "threshold": None,
        "value": None,
        "passed": False,
        "reason": f"no baseline: {reason} (evaluator.require_baseline)",
    }


def _links(examples: Examples, model_run: ModelRun | None) -> dict[str, str]:
    """Related files the report links to, where they exist: the ingest's rejects, the training logs."""
    links = {}
    rejects = examples.path.parent / "rejects" / "rejects.jsonl"  # Beside the Examples in a kflow run folder.
    if rejects.exists():
        links["rejects.jsonl"] = str(rejects)
    if model_run is not None and model_run.log_dir.exists():
        links["TensorBoard logs"] = str(model_run.log_dir)
    return links


def _statistics_page(
    evaluation: ModelEvaluation,
    statistics: ExampleStatistics | None,
    anomalies: ExampleAnomalies | None,
    previous: ExampleStatistics | None,
    title: str | None,
) -> Path | None:
    """Writes the data's statistics page beside the report (anomalies marked, where they were checked; the previous
    span's figures beside, with the drift the validator measured)."""
    if statistics is None or not statistics.splits:
        return None
    found, drift = None, None
    if anomalies is not None and (anomalies.path / "anomalies.json").exists():
        found = anomalies.summary.get("splits") or {}
        drift = anomalies.summary.get("drift")
    page = evaluation.path / "statistics.html"
    protos = {split: read_split(statistics, split) for split in statistics.splits}
    before = {split: read_split(previous, split) for split in previous.splits} if previous is not None else None
    heading = f"{title}: the data's statistics" if title else "The data's statistics"
    links = {"the report": "report.html"}
    page.write_text(statistics_page(protos, anomalies=found, title=heading, links=links, previous=before, drift=drift))
    return page


class _Measure:
    """Streams a split through a model into the task's accumulators (overall and per slice)."""

    fed: set[str] | None = None  # the columns the model is fed, where the data parses more (a slice's own)

    def __init__(self, task, metrics_class, schema, examples, split, eval_split, batch_size, seed):
        self.task, self.metrics_class, self.schema = task, metrics_class, schema
        self.examples, self.split, self.eval_split = examples, split, eval_split
        self.batch_size, self.seed = batch_size, seed

    def __call__(
        self, model: Model, slices: list[dict[str, Any]], sample: ServingSample | None = None
    ) -> tuple[TaskMetrics, dict[str, dict]]:
        """The split's metrics, overall and by slice; `sample` keeps the split's first examples and outputs."""
        task_object = _task(self.task, self.schema, model)
        left_out = (getattr(task_object, "preprocessing", None) or {}).get("left_out") or {}
        for spec in [spec for spec in slices if spec["by"] in left_out]:  # a constant, an identifier: not read
            log.warning("evaluate: no slices by %r: the model leaves it out (%s)", spec["by"], left_out[spec["by"]])
        slices = [spec for spec in slices if spec["by"] not in left_out]
        taken = getattr(task_object, "model_inputs", None)  # a user's model of some columns is fed only those
        for spec in [spec for spec in slices if taken is not None and spec["by"] not in (*taken, "label")]:
            log.warning("evaluate: no slices by %r: the model does not take it (trainer.module)", spec["by"])
        slices = [spec for spec in slices if taken is None or spec["by"] in (*taken, "label")]
        self.fed = None
        read = getattr(task_object, "types", None)  # a table's features its preprocessing reads (a preprocessing_fn's)
        unread = [spec["by"] for spec in slices if read is not None and spec["by"] not in (*read, "label")]
        if unread and taken is None:  # sliced by the Examples' column itself, as TFMA slices: parsed, not fed
            columns = type(task_object)(task_object.schema).types
            self.fed = set(read)
            task_object.types = {**read, **{by: columns[by] for by in unread if by in columns}}
        keras_model = load_trained(model.keras_file, task_object.model_name)
        batches = task_object.dataset(self.examples, self.split, batch_size=1, training=False, seed=self.seed)
        check_inputs(model, keras_model, batches)
        prototype = self.metrics_class(**_metric_options(task_object))
        if prototype.needs_eval_pass:
            self._stream(task_object, keras_model, self.eval_split, prototype, [])
            prototype.choose_threshold()
        overall, by_slice = prototype.new(), {}
        self._stream(task_object, keras_model, self.split, overall, slices, by_slice, sample)
        return overall, by_slice

    def _stream(self, task_object, keras_model, split, overall, slices, by_slice=None, sample=None) -> None:
        batches = task_object.dataset(self.examples, split, batch_size=self.batch_size, training=False, seed=self.seed)
        batches = untuned(batches)  # its iterator's deletion would wait for an autotuning round (input_autotune.py)
        for batch in batches.as_numpy_iterator():
            x, y = batch[0], batch[1]
            weight = batch[2] if len(batch) > 2 else None
            fed = x if self.fed is None else {name: value for name, value in x.items() if name in self.fed}
            outputs = np.asarray(keras_model.predict_on_batch(fed), dtype=np.float64)
            if sample is not None:
                sample.add(keras_model, fed, outputs)
            overall.update(x, y, outputs, weight)
            for spec in slices:
                keys = overall.slice_keys(spec["by"], x, y, spec.get("boundaries") or [])
                accumulators = by_slice.setdefault(spec["by"], {})
                for key in np.unique(keys):
                    rows = keys == key
                    accumulators.setdefault(str(key), overall.new()).update(
                        subset(x, rows), y[rows], outputs[rows], None if weight is None else weight[rows]
                    )


def _task(dataset: str, schema: Schema, model: Model) -> Task:
    """The task that reads data for `model`, with the options and assets it was trained with."""
    if model.task_spec["dataset"] != dataset:
        raise ValueError(f"the model {model.uri} was trained on {model.task_spec['dataset']!r}, not on {dataset!r}")
    return task_for_model(model, schema.file)


def _other_classes(dataset: str, schema: Schema, model: Model, baseline: Model) -> str | None:
    """Why `baseline` cannot be scored beside `model`: it predicts other classes (it would score no record of a class
    it lacks); None when it can."""
    # What each model's scores stand for: as trained (assets/classes.txt; an image folder's task takes its class
    # names from today's data), else as its task reads them.
    ours, theirs = (one.class_names or predicted_classes(_task(dataset, schema, one)) for one in (model, baseline))
    if ours == theirs:
        return None
    if bool(ours) != bool(theirs):
        said = f"the baseline model {baseline.uri} is {predicting(theirs)}, this one {predicting(ours)}"
        return f"{said} ({TASK_INFERRED})"
    shown = ", ".join(map(str, (theirs or [])[:8]))
    return f"the baseline model {baseline.uri} predicts other classes ({shown}) than this one"


def _metric_options(task_object: Any) -> dict[str, Any]:
    options: dict[str, Any] = dict(task_object.metric_options())
    if num_classes := getattr(task_object, "num_classes", None):
        options["num_classes"] = num_classes
    # The MLM's reference point: always predicting the most frequent training token.
    if baseline := getattr(task_object, "baseline", None):
        options["baseline_token_id"] = int(baseline["most_frequent_token_id"])
    return options


def _check_slices(slices: Any, metrics_class: type[TaskMetrics]) -> None:
    if not isinstance(slices, list):
        raise ValueError(f"slices must be a list such as [{{'by': 'label'}}], got {slices!r}")
    for index, spec in enumerate(slices):
        known = isinstance(spec, dict) and (spec.get("by") in metrics_class.SLICES or metrics_class.SLICES_BY_FEATURE)
        if not known or not isinstance(spec.get("by"), str):
            raise ValueError(
                f"slices[{index}]: {spec!r} is not a slice of this task; "
                f"slice by: {', '.join(metrics_class.SLICES) or 'nothing'}"
            )
        if spec["by"] == "length" and not spec.get("boundaries"):
            raise ValueError(f"slices[{index}]: a length slice needs boundaries, e.g. [20, 40, 80]")
        unknown = set(spec) - {"by", "boundaries"}
        if unknown:
            raise ValueError(f"slices[{index}]: unknown keys {sorted(unknown)} (allowed: by, boundaries)")


def _scalars(metrics: dict[str, Any]) -> dict[str, float]:
    return {
        key: value
        for key, value in metrics.items()
        if isinstance(value, (int, float)) and not isinstance(value, bool) and key != "seed"
    }


def _mean_error(overall: Any) -> float | None:
    """A regression's mean of predictions less labels over the split (its offset), where its metrics keep them."""
    if not hasattr(overall, "arrays"):
        return None
    outputs, labels = overall.arrays()
    errors = np.asarray(outputs, np.float64).ravel() - np.asarray(labels, np.float64).ravel()
    return float(np.mean(errors)) if errors.size else None
