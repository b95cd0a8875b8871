"""The container entrypoint of compiled pipelines: runs one component, as `kflow run` does.

    python -m kflow.pipeline.runners.kfp_entrypoint --component kflow.components.trainer.component:Trainer \\
        --input examples=/gcs/.../examples --output model=/gcs/.../model --parameter epochs=20

It builds the typed artifacts from the paths KFP substitutes, reads each parameter's
text by the type its spec declares, binds defaults and checks types exactly as a
pipeline node does, and calls the executor through `invoke_executor`, the same
function the local runner uses: one code path, two runners. Given `--executor-input` (every
compiled task gets KFP's `{{$}}`) it then writes KFP's executor output, which is how a KFP launcher
learns the task's output artifacts; with `--publish-metrics` (the Evaluator's task) it gives the
metrics outputs their metadata there, so the run page shows them; with `--publish-verdict` it
writes a blessing's verdict to the output parameter a `dsl.If` reads.
Exits 1 (with the traceback) when the executor fails, 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import shutil
import sys
from pathlib import Path
from typing import Any

from kflow.pipeline.dsl import lean_imports
from kflow.pipeline.dsl.artifacts import ModelBlessing, ModelRun
from kflow.pipeline.dsl.component import Channel, Component, load_component
from kflow.pipeline.kubeflow.baselines import gated_model_input, record_blessed_model
from kflow.pipeline.runners.kfp_metrics import evaluation_metadata, evaluation_summary, write_executor_output
from kflow.pipeline.runners.node_runner import invoke_executor

log = logging.getLogger("kflow")
_NO_STATISTICS = (
    "<!DOCTYPE html><html><head><meta charset='utf-8'><title>No statistics</title></head><body>"
    "<p>This pipeline computes no statistics of its data (a statistics step runs for tabular data).</p></body></html>\n"
)


def parse_parameter(name: str, kind: type, text: str) -> Any:
    """A parameter's value from the text KFP substituted for `{{$.inputs.parameters[name]}}`."""
    try:
        if kind is str:
            return text
        if kind is bool:
            if text.lower() not in ("true", "false"):
                raise ValueError("expected true or false")
            return text.lower() == "true"
        if kind is int:
            number = float(text)
            if not number.is_integer():
                raise ValueError("expected a whole number")
            return int(number)
        if kind is float:
            return float(text)
        return _whole_numbers_as_ints(json.loads(text))
    except ValueError as error:
        raise ValueError(f"parameter {name!r}: cannot read {text!r} as {kind.__name__}: {error}") from None


def _whole_numbers_as_ints(value: Any) -> Any:
    """The IR stores every number as a double (9 → 9.0); JSON-typed parameters get their ints back."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {key: _whole_numbers_as_ints(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_whole_numbers_as_ints(item) for item in value]
    return value


def bind_node(component: type[Component], inputs: dict[str, str], parameter_texts: dict[str, str]) -> Component:
    """A node of `component` with the parameters read from their texts, bound as in `kflow run`."""
    spec = component.spec
    unknown = set(parameter_texts) - set(spec.parameters)
    if unknown:
        raise ValueError(
            f"{component.__name__}: unknown parameters {sorted(unknown)} (known: {sorted(spec.parameters)})"
        )
    values = {name: parse_parameter(name, spec.parameters[name].type, text) for name, text in parameter_texts.items()}
    # Binding through a node applies the spec's defaults and type checks, exactly as in `kflow run`.
    return component(
        "kfp", parameters=values, **{name: Channel("upstream", name, spec.inputs[name]) for name in inputs}
    )


def source_digest(node: Component) -> str:
    """One digest of the node's source files' names, sizes and SHA-256s ("" when it reads none)."""
    fingerprint = node.data_fingerprint()
    return hashlib.sha256(json.dumps(fingerprint["key"]).encode()).hexdigest() if fingerprint else ""


def run_component(
    component: type[Component],
    inputs: dict[str, str],
    outputs: dict[str, str],
    parameter_texts: dict[str, str],
    working_dir: Path | None = None,
) -> dict[str, Any]:
    """Runs `component`'s executor on artifacts at the given paths; returns the executor's summary."""
    spec = component.spec
    required_inputs = set(spec.inputs) - spec.optional_inputs
    for role, given, expected, required in (
        ("input", inputs, spec.inputs, required_inputs),
        ("output", outputs, spec.outputs, set(spec.outputs)),
    ):
        if not required <= set(given) <= set(expected):
            raise ValueError(
                f"{component.__name__}: {role}s {sorted(given)} given, the spec declares {sorted(expected)}"
                + (f" (optional: {sorted(set(expected) - required)})" if set(expected) != required else "")
            )
    node = bind_node(component, inputs, parameter_texts)
    output_artifacts = {name: spec.outputs[name](path) for name, path in outputs.items()}
    for artifact in output_artifacts.values():
        artifact.path.mkdir(parents=True, exist_ok=True)
    return invoke_executor(
        spec.executor,
        inputs={name: spec.inputs[name](path) for name, path in inputs.items()},
        outputs=output_artifacts,
        parameters=node.parameters,
        working_dir=working_dir,
    )


def _pairs(option: str, items: list[str]) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise ValueError(f"{option} {item!r}: expected NAME=VALUE")
        if name in pairs:
            raise ValueError(f"{option} {name!r} given twice")
        pairs[name] = value
    return pairs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kfp_entrypoint", description=__doc__.splitlines()[0])
    parser.add_argument("--component", required=True, help="package.module:Class")
    parser.add_argument("--input", action="append", default=[], metavar="NAME=PATH")
    parser.add_argument("--output", action="append", default=[], metavar="NAME=PATH")
    parser.add_argument("--parameter", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--summary-file", help="also write the executor's summary here (JSON)")
    parser.add_argument(
        "--working-dir",
        type=Path,
        help="a folder the executor keeps across attempts and shares with the job's other replicas (checkpoints)",
    )
    parser.add_argument(
        "--code-version",
        help="the component's code version when the pipeline was compiled (part of KFP's cache key); "
        "an image whose kflow code differs is said in the log",
    )
    parser.add_argument(
        "--source-fingerprint",
        help="the digest of the source files, from the task that fingerprinted them (part of KFP's cache key)",
    )
    parser.add_argument(
        "--fingerprint-sources",
        metavar="PATH",
        help="only fingerprint the component's source files and write their digest to PATH; no executor runs",
    )
    parser.add_argument(
        "--executor-input",
        help="KFP's executor input (JSON): after the run, the task's executor output (its output artifacts, with "
        "their metadata) goes to the file it names; needed by --publish-metrics",
    )
    parser.add_argument(
        "--track-mlflow",
        metavar="JSON",
        help="log this evaluate task to MLflow: the config's tracking.mlflow with the pipeline, its config and node",
    )
    parser.add_argument(
        "--publish-metrics",
        metavar="EVALUATION=CLASSIFICATION",
        help="after the run, give the ModelEvaluation output EVALUATION and the ClassificationMetrics output "
        "CLASSIFICATION their KFP metadata (scalars, confusion matrix, ROC curve)",
    )
    parser.add_argument(
        "--publish-verdict",
        action="append",
        default=[],
        metavar="BLESSING=PATH",
        help="after the run, write 'true' or 'false' (the ModelBlessing output BLESSING's verdict) to PATH, "
        "the KFP output parameter the `dsl.If` of a conditional task reads",
    )
    parser.add_argument(
        "--publish-report",
        metavar="EVALUATION=PATH",
        help="after the run, copy the ModelEvaluation output EVALUATION's report.html to PATH (a system.HTML output)",
    )
    parser.add_argument(
        "--publish-statistics",
        metavar="EVALUATION=PATH",
        help="after the run, copy the ModelEvaluation output EVALUATION's statistics.html (the data's statistics page) "
        "to PATH (a system.HTML output); a page saying there is none where the pipeline computes no statistics",
    )
    parser.add_argument(
        "--publish-summary",
        metavar="EVALUATION=PATH",
        help="after the run, write a Markdown summary of EVALUATION (and of the task's ModelBlessing output) to PATH",
    )
    parser.add_argument(
        "--record-blessed-model",
        metavar="BLESSING=STORE",
        help="after the run, if the ModelBlessing output BLESSING blessed the task's model, copy the model into "
        "STORE and record it there for the next runs' latest-blessed baseline (pipeline/kubeflow/baselines.py)",
    )
    parser.add_argument(
        "--baseline-identity",
        type=json.loads,
        default=None,
        metavar="JSON",
        help="with --record-blessed-model: the name, dataset, task and label the model was trained for, recorded",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    try:
        component = load_component(args.component)
        inputs = _pairs("--input", args.input)
        outputs = _pairs("--output", args.output)
        parameters = _pairs("--parameter", args.parameter)
        publish = _pairs("--publish-metrics", [args.publish_metrics] if args.publish_metrics else [])
        if publish and not args.executor_input:
            raise ValueError("--publish-metrics needs --executor-input")
        if set(publish) - set(outputs):
            raise ValueError(f"--publish-metrics {args.publish_metrics!r}: not an --output of this task")
        verdicts = _pairs("--publish-verdict", args.publish_verdict)
        reports = _pairs("--publish-report", [args.publish_report] if args.publish_report else [])
        summaries = _pairs("--publish-summary", [args.publish_summary] if args.publish_summary else [])
        data_pages = _pairs("--publish-statistics", [args.publish_statistics] if args.publish_statistics else [])
        if set(reports) - set(outputs) or set(summaries) - set(outputs) or set(data_pages) - set(outputs):
            raise ValueError("--publish-report/--publish-summary/--publish-statistics: not an --output of this task")
        if set(verdicts) - set(outputs):
            raise ValueError(f"--publish-verdict {sorted(set(verdicts) - set(outputs))}: not an --output of this task")
        records = _pairs("--record-blessed-model", [args.record_blessed_model] if args.record_blessed_model else [])
        if set(records) - set(outputs):
            raise ValueError(f"--record-blessed-model {args.record_blessed_model!r}: not an --output of this task")
        model_input = gated_model_input(component.spec) if records else None
        executor_input = json.loads(args.executor_input) if args.executor_input else None
    except (ValueError, ImportError) as error:
        print(f"kfp_entrypoint: {error}", file=sys.stderr)
        return 2
    if args.fingerprint_sources:
        # Only the parameters name the source files: the inputs, which this task does not get, are wired as stubs.
        stubs = {name: "" for name in component.spec.inputs if name not in component.spec.optional_inputs}
        digest = source_digest(bind_node(component, {**stubs, **inputs}, parameters))
        Path(args.fingerprint_sources).parent.mkdir(parents=True, exist_ok=True)
        Path(args.fingerprint_sources).write_text(digest)
        log.info("%s: the source files' digest is %s", args.component, digest or "(no source files)")
        return 0
    if args.code_version and args.code_version != component.code_version():
        log.warning(
            "%s: compiled with kflow code %s, this image runs %s: rebuild and push the image, or compile again",
            args.component,
            args.code_version,
            component.code_version(),
        )
    if args.source_fingerprint is not None:
        log.info("%s: source files with digest %s", args.component, args.source_fingerprint or "(none)")
    log.info("%s: running with inputs %s, outputs %s", args.component, inputs, outputs)
    summary = run_component(component, inputs, outputs, parameters, args.working_dir)
    text = json.dumps(summary, indent=2, sort_keys=True, default=str)
    print(text)
    if args.summary_file:
        Path(args.summary_file).write_text(text + "\n")
    metadata: dict[str, dict[str, Any]] = {}
    for evaluation, classification in publish.items():
        metadata.update(evaluation_metadata(evaluation, Path(outputs[evaluation]), classification))
    for evaluation, path in reports.items():
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(Path(outputs[evaluation]) / "report.html", path)
    for evaluation, path in data_pages.items():
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        page = Path(outputs[evaluation]) / "statistics.html"
        if page.is_file():
            shutil.copyfile(page, path)
        else:  # a dataset without statistics (mnist, text): said, not an empty output
            Path(path).write_text(_NO_STATISTICS)
    blessings = [name for name in outputs if issubclass(component.spec.outputs[name], ModelBlessing)]
    for evaluation, path in summaries.items():
        blessing_dir = Path(outputs[blessings[0]]) if len(blessings) == 1 else None
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        runs = [name for name in inputs if issubclass(component.spec.inputs[name], ModelRun)]
        logs = [f"{_input_uri(executor_input, name) or inputs[name]}/logs" for name in runs]
        Path(path).write_text(evaluation_summary(Path(outputs[evaluation]), blessing_dir, logs[0] if logs else None))
    for blessing, path in verdicts.items():
        verdict = "true" if ModelBlessing(outputs[blessing]).blessed else "false"
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(verdict)
        log.info("published %s's verdict %s to %s", blessing, verdict, path)
    if args.track_mlflow:
        _track(json.loads(args.track_mlflow), component, inputs, outputs, summary, executor_input)
    for blessing, store in records.items():
        verdict = ModelBlessing(outputs[blessing])
        if verdict.blessed:
            model_uri = _input_uri(executor_input, model_input) or inputs[model_input]
            record = record_blessed_model(
                Path(store), Path(inputs[model_input]), model_uri, verdict.baseline_model, args.baseline_identity
            )
            log.info("recorded the blessed model %s as a baseline for later runs: %s", model_uri, record)
    if executor_input:
        written = write_executor_output(executor_input, metadata)
        if written:
            log.info("wrote the executor output (%s) to %s", ", ".join(sorted(outputs)) or "no artifacts", written)
    return 0


def _track(
    settings: dict[str, Any],
    component: type[Component],
    inputs: dict[str, str],
    outputs: dict[str, str],
    summary: dict[str, Any],
    executor_input: dict[str, Any] | None,
) -> None:
    """Logs the task to MLflow as `kflow run` logs a run; tracking never fails the task (one warning line)."""
    from kflow.pipeline.runners.mlflow_tracking import TrackingError, kfp_task_run, track_run

    spec = component.spec
    kinds = {name: kind.__name__ for name, kind in {**spec.inputs, **spec.outputs}.items()}
    run = kfp_task_run(settings, kinds, inputs, outputs, summary, _input_uri(executor_input, "model"))
    try:
        track_run(settings, run)
    except TrackingError as error:
        log.warning("tracking: %s", error)


def _input_uri(executor_input: dict[str, Any] | None, name: str) -> str | None:
    """The KFP URI (gs://, minio://, s3://) of an input artifact, which stays the same when KFP reuses a cached task."""
    if not executor_input:
        return None
    listed = executor_input.get("inputs", {}).get("artifacts", {}).get(name, {}).get("artifacts", [])
    return listed[0].get("uri") if listed else None


if __name__ == "__main__":
    lean_imports.install()
    sys.exit(main())
