"""Shows an Evaluator's results on the KFP run page: metadata of the task's metrics artifacts.

KFP reads the metadata of a task's output artifacts from the executor output file
(`{{$.outputs.output_file}}`, named in the executor input `{{$}}`), as its own Python
executor writes it. The Evaluator writes `kfp_metrics.json` into its ModelEvaluation
folder; this module turns it into KFP's metadata shapes with KFP's own artifact classes
(`Metrics.log_metric`, `ClassificationMetrics.log_confusion_matrix` / `log_roc_curve`)
and writes the executor output for the task's `system.Metrics` and
`system.ClassificationMetrics` outputs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kfp import dsl
from kfp.dsl.executor import create_artifact_instance

from kflow.pipeline.dsl.artifacts import ModelBlessing, ModelEvaluation
from kflow.pipeline.kubeflow import executor_output


def metrics_metadata(kfp_metrics: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(`system.Metrics` metadata, `system.ClassificationMetrics` metadata) of an Evaluator's kfp_metrics.json."""
    scalars = dsl.Metrics()
    for name, value in sorted(kfp_metrics.get("scalars", {}).items()):
        scalars.log_metric(name, float(value))
    classification = dsl.ClassificationMetrics()
    if "confusion_matrix" in kfp_metrics:
        matrix = kfp_metrics["confusion_matrix"]
        classification.log_confusion_matrix(matrix["categories"], matrix["matrix"])
    if "roc" in kfp_metrics:
        roc = kfp_metrics["roc"]
        classification.log_roc_curve(roc["fpr"], roc["tpr"], roc["thresholds"])
    return scalars.metadata, classification.metadata


def write_executor_output(executor_input: dict[str, Any], metadata: dict[str, dict[str, Any]]) -> Path | None:
    """Writes the executor output naming every output artifact of the task, the named ones with their metadata
    (pipeline/kubeflow/executor_output.py); returns the file's path (None where the executor input names none)."""
    declared = executor_input["outputs"].get("artifacts", {})
    for name, artifact_metadata in metadata.items():
        if name not in declared:
            raise ValueError(f"the task has no output artifact {name!r} (outputs: {', '.join(sorted(declared))})")
        (runtime_artifact,) = declared[name]["artifacts"]
        # An output with no file of its own (the ClassificationMetrics one) gets its metadata as its content,
        # so that the launcher has a file to upload.
        local = Path(create_artifact_instance(runtime_artifact).path)
        if not local.exists():
            local.parent.mkdir(parents=True, exist_ok=True)
            local.write_text(json.dumps(artifact_metadata, indent=2, sort_keys=True) + "\n")
    return executor_output.write_executor_output(executor_input, metadata)


def evaluation_metadata(evaluation_output: str, evaluation_dir: Path, classification_output: str) -> dict[str, Any]:
    """{output: KFP metadata} of an Evaluator task's metrics outputs, from its ModelEvaluation's kfp_metrics.json."""
    scalars, classification = metrics_metadata(ModelEvaluation(evaluation_dir).kfp_metrics)
    return {evaluation_output: scalars, classification_output: classification}


def publish_evaluation_metrics(
    executor_input: dict[str, Any], evaluation_output: str, evaluation_dir: Path, classification_output: str
) -> Path | None:
    """Writes the executor output of a task from the kfp_metrics.json of its ModelEvaluation in `evaluation_dir`."""
    metadata = evaluation_metadata(evaluation_output, evaluation_dir, classification_output)
    return write_executor_output(executor_input, metadata)


def evaluation_summary(evaluation_dir: Path, blessing_dir: Path | None, training_logs: str | None = None) -> str:
    """A short Markdown page for the KFP UI: the verdict, the scalar metrics (beside the baseline's) and the
    failed checks of an Evaluator's ModelEvaluation (and ModelBlessing) folders, the baseline model, and
    where the training's TensorBoard logs are (KFP v2's UI has no TensorBoard viewer of its own)."""
    metrics = ModelEvaluation(evaluation_dir).read_json("metrics.json")
    scalars = ModelEvaluation(evaluation_dir).kfp_metrics.get("scalars", {})
    baseline = metrics.get("baseline") or {}
    lines = []
    if blessing_dir is not None:
        blessing = ModelBlessing(blessing_dir)
        lines += [f"## {'BLESSED' if blessing.blessed else 'NOT BLESSED'}", ""]
        failed = blessing.failed_checks
        if failed:
            lines += ["**Failed checks**", ""] + [f"- {_check_line(check)}" for check in failed] + [""]
    dataset = metrics.get("dataset") or metrics.get("task", "")  # `task` in an evaluation cached before the rename
    lines += [f"{dataset} model on the {metrics.get('split', '?')} split", ""]
    header = "| metric | value |" + (" baseline |" if baseline else "")
    lines += [header, "|---|---|" + ("---|" if baseline else "")]
    for name, value in sorted(scalars.items()):
        row = f"| {name} | {value:.4g} |"
        if baseline:
            reference = baseline.get(name)
            row += f" {reference:.4g} |" if isinstance(reference, (int, float)) else " |"
        lines.append(row)
    baseline_model = ModelBlessing(blessing_dir).baseline_model if blessing_dir is not None else None
    lines += ["", f"Baseline model: `{baseline_model}`" if baseline_model else "No baseline model."]
    if training_logs:
        lines += ["", f"TensorBoard logs of the training: `{training_logs}` (`tensorboard --logdir` on it)"]
    return "\n".join(lines) + "\n"


def _check_line(check: dict[str, Any]) -> str:
    """`accuracy min_gain 0: 0.977 (baseline 0.9869)`, from a check of blessing.json."""
    value, reference = check.get("value"), check.get("baseline")
    shown = "undefined" if value is None else f"{value:.4g}"
    against = f" (baseline {reference:.4g})" if isinstance(reference, (int, float)) else ""
    return f"{check['metric']} {check['bound']} {check['threshold']:g}: {shown}{against}"
