"""A finished `kflow run` as an MLflow run (`tracking.mlflow`), read from its run record, after the run.

What one kflow run becomes (run name: the kflow run id; experiment: `tracking.mlflow.experiment`, default the
pipeline's name):

    params     the config, flattened (`trainer.optimizer.learning_rate`)
    metrics    each component's summary numbers (`ingest.read`, `evaluate.accuracy`), the Trainer's per-epoch
               metrics with the epoch as step (`train.loss`, `train.val_accuracy`), the Evaluator's metrics at
               full precision and its verdict (`evaluate.blessed`: 1 or 0)
    tags       kflow.status; per component kflow.<node>.status (succeeded | cached | failed), .cached_from,
               .code_version, .fingerprint, and for an ingest .data (a digest of its source files' sha256) and
               .data_files; kflow.cached: all | some | none
    artifacts  run.json, each evaluation's report.html, plots, metrics.json and blessing.json under <node>/, and
               a blessed model's serving SavedModel under <node>/model, registered in the Model Registry under
               the pipeline's name (once per model: a cached run of the same model adds no version)

Tracking never changes a run's outcome: a tracking server that cannot be reached costs a bounded wait and one
warning line. MLflow is an optional extra (`pip install 'kflow[mlflow]'`), imported only when tracking is on.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kflow.pipeline.dsl.artifacts import ModelBlessing, ModelEvaluation, ModelRun
from kflow.pipeline.dsl.secrets import redact_config, redact_urls
from kflow.pipeline.runners.mlflow_trials import log_trials
from kflow.pipeline.runners.run_record import ArtifactRef, Execution, Run

log = logging.getLogger(__name__)

# MLflow's limits on one log_batch call and on a param's value.
_BATCH_PARAMS, _BATCH_METRICS, _BATCH_TAGS, _PARAM_CHARS = 100, 1000, 100, 6000
_PLOTS = ("*.png", "*.svg")
_EVALUATION_FILES = ("report.html", "metrics.json", "serving_check.json")


class TrackingError(RuntimeError):
    """Tracking was asked for and could not be done (MLflow missing, the server refusing)."""


def track_run(settings: dict[str, Any], run: Run) -> str:
    """Logs `run` to the MLflow tracking server of `settings` ({uri, experiment, register}); returns the MLflow
    run id. Raises TrackingError with one line saying why it could not."""
    # Bounded waits: MLflow's own defaults retry a dead server for minutes.
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "2")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", str(int(settings.get("timeout", 30))))
    uri, stack = settings["uri"], contextlib.ExitStack()
    if _is_folder(uri):  # asked for by name: MLflow 3 keeps its folder store in maintenance, refused unless allowed
        os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
    try:
        from mlflow import MlflowClient
        from mlflow.entities import Metric, Param, RunTag
    except ImportError:
        raise TrackingError("tracking.mlflow needs MLflow: pip install 'kflow[mlflow]'") from None
    try:
        # The registry is the store's own, also where MLflow resolves a model version's source by its process-wide
        # URIs: their default, MLflow 3's sqlite:///mlflow.db in the current folder, was left beside every run a
        # folder store tracked (a user trial).
        client = MlflowClient(tracking_uri=uri, registry_uri=uri)  # a URI MLflow cannot use fails here already
        stack.enter_context(_process_uris(uri))
        experiment = settings.get("experiment") or run.pipeline
        found = client.get_experiment_by_name(experiment)
        experiment_id = found.experiment_id if found else client.create_experiment(experiment, _artifacts_at(uri))
        created = client.create_run(experiment_id, run_name=run.run_id, tags={"kflow.run_id": run.run_id})
        run_id = created.info.run_id
        now = int(time.time() * 1000)
        params = [Param(key, value) for key, value in flat_params(redact_config(run.metadata.get("config", {})))]
        metrics = [Metric(key, value, now, step) for key, value, step in run_metrics(run)]
        tags = [RunTag(key, value) for key, value in run_tags(run)]
        for batch, size, field in ((params, _BATCH_PARAMS, "params"), (metrics, _BATCH_METRICS, "metrics"),
                                   (tags, _BATCH_TAGS, "tags")):  # fmt: skip
            for start in range(0, len(batch), size):
                client.log_batch(run_id, **{field: batch[start : start + size]})
        if (run.run_dir / "run.json").is_file():
            client.log_artifact(run_id, str(run.run_dir / "run.json"))
        for node, folder, files in evaluation_files(run):
            for file in files:
                client.log_artifact(run_id, str(folder / file), artifact_path=node)
        registered = _log_blessed_models(client, run, run_id, settings.get("register", True))
        log_trials(client, experiment_id, run_id, run)  # a tuner's trials, as runs nested under this one
        client.set_terminated(run_id, "FINISHED" if run.status == "succeeded" else "FAILED")
    except TrackingError:
        raise
    except Exception as error:  # MLflow's errors (RestException, connection errors) are many; say one line.
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise TrackingError(f"MLflow at {redact_urls(settings['uri'])}: {redact_urls(first)}") from None
    finally:
        stack.close()
    log.info(
        "tracking: logged run %s to MLflow at %s as run %s (experiment %r)%s",
        run.run_id, redact_urls(settings["uri"]), run_id, experiment,
        "".join(f"; registered {name} version {version}" for name, version in registered),
    )  # fmt: skip
    return run_id


@contextlib.contextmanager
def _process_uris(uri: str) -> Iterator[None]:
    """MLflow's process-wide tracking and registry URIs (its environment variables, which a URI set in code would
    override: kflow sets none) as `uri` while it logs, then as they were."""
    names = ("MLFLOW_TRACKING_URI", "MLFLOW_REGISTRY_URI")
    before = {name: os.environ.get(name) for name in names}
    os.environ.update(dict.fromkeys(names, uri))
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _is_folder(uri: str) -> bool:
    return uri.startswith("file:") or "://" not in uri


def _artifacts_at(uri: str) -> str | None:
    """A SQLite store's artifacts beside its file (`<folder>/mlartifacts`), not in `./mlruns` under whatever folder
    the run started in (MLflow's default); None (the store's own choice) for any other store."""
    if not uri.startswith("sqlite:///"):
        return None
    return (Path(uri.removeprefix("sqlite:///")).resolve().parent / "mlartifacts").as_uri()


def kfp_task_run(
    settings: dict[str, Any],
    kinds: dict[str, str],
    inputs: dict[str, str],
    outputs: dict[str, str],
    summary: dict[str, Any],
    model_uri: str | None,
) -> Run:
    """What a Kubeflow evaluate task knows, as the Run to log: its own execution (`settings["node"]`), the run
    history of the model it evaluated as the trainer's, the config compiled into the task. The model's identity
    in the registry is its KFP URI, which a cached KFP task keeps. `kinds`: each input's and output's artifact
    type name."""

    def refs(paths: dict[str, str]) -> dict[str, ArtifactRef]:
        return {name: ArtifactRef(kinds[name], path) for name, path in paths.items()}

    node = settings["node"]
    given = refs(inputs)
    if "model" in given:
        fingerprint = hashlib.sha256((model_uri or given["model"].uri).encode()).hexdigest()[:20]
        given["model"] = ArtifactRef(given["model"].type, given["model"].uri, fingerprint)
    # The upstream tasks as far as this one sees them (the trainer: its run history), named as in the pipeline.
    producers: dict[str, dict[str, ArtifactRef]] = {}
    for name, ref in given.items():
        producers.setdefault(settings.get("producers", {}).get(name, f"{node}.{name}"), {})[name] = ref
    executions = {producer: Execution(producer, "succeeded", outputs=refs_) for producer, refs_ in producers.items()}
    executions[node] = Execution(node, "succeeded", inputs=given, outputs=refs(outputs), summary=summary)
    run_id = os.environ.get("KFLOW_KFP_RUN_ID") or os.environ.get("HOSTNAME") or "kfp"
    run_dir = Path(next(iter(outputs.values()))).parent
    metadata = {"config": settings.get("config", {}), "orchestrator": "kubeflow"}
    return Run(run_id, run_dir, settings["pipeline"], status="succeeded", metadata=metadata, executions=executions)


def flat_params(config: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, str]]:
    """`section.field` → the value as text (JSON for lists; long values cut to MLflow's limit)."""
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            yield from flat_params(value, f"{name}.")
        else:
            text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
            yield name, text[:_PARAM_CHARS]


# An epoch's numbers that are not the model's: named apart from the training's own of the same name.
EPOCH_OWN = {"seconds": "epoch_seconds", "examples_per_second": "epoch_examples_per_second"}


def run_metrics(run: Run) -> Iterator[tuple[str, float, int]]:
    """(key, value, step) of every number the run's components report."""
    for node, execution in run.executions.items():
        epochs = [
            epoch
            for model_run in _finished_outputs(execution, ModelRun)
            for epoch in _history(model_run).get("per_epoch", [])
        ]
        # A summary number that is also per epoch (the final loss) is the last point of that curve, not a step 0; an
        # epoch's own time and speed are not the training's (a user trial: train.examples_per_second's last point
        # was the third epoch's 13,678, the training's 2,210): logged apart, as epoch_seconds, epoch_examples_...
        per_epoch = {key for epoch in epochs for key in epoch if key not in EPOCH_OWN}
        yield from _numbers(node, {k: v for k, v in execution.summary.items() if k not in per_epoch})
        for epoch in epochs:
            step = int(epoch.get("epoch", 0))
            for key, value in epoch.items():
                if key not in ("epoch", "step") and _is_number(value):
                    yield f"{node}.{EPOCH_OWN.get(key, key)}", float(value), step
        if not execution.finished:
            continue
        for evaluation in execution.outputs_of_type(ModelEvaluation):
            scalars = {k: v for k, v in _read_json(evaluation.path / "metrics.json").items() if k not in
                       execution.summary}  # fmt: skip
            yield from _numbers(node, scalars)
        for blessing in execution.outputs_of_type(ModelBlessing):
            yield f"{node}.blessed", float(blessing.blessed), 0


def run_tags(run: Run) -> Iterator[tuple[str, str]]:
    yield "kflow.pipeline", run.pipeline
    yield "kflow.status", run.status
    yield "kflow.run_dir", str(run.run_dir)
    if config_file := run.metadata.get("config_file"):
        yield "mlflow.source.name", str(config_file)
    if spans := run.metadata.get("spans"):  # the spans the model saw (pipeline/app/span_pipeline.py)
        yield "kflow.spans", ",".join(spans)
    statuses = [execution.status for execution in run.executions.values()]
    cached = sum(status == "cached" for status in statuses)
    yield "kflow.cached", "all" if statuses and cached == len(statuses) else "some" if cached else "none"
    for node, execution in run.executions.items():
        yield f"kflow.{node}.status", execution.status
        for field in ("cached_from", "code_version", "fingerprint"):
            if value := getattr(execution, field):
                yield f"kflow.{node}.{field}", str(value)
        if execution.data and (files := execution.data.get("files")):
            digest = hashlib.sha256("".join(str(file.get("sha256")) for file in files).encode()).hexdigest()
            yield f"kflow.{node}.data", digest[:20]
            yield f"kflow.{node}.data_files", str(len(files))
        for blessing in execution.outputs_of_type(ModelBlessing) if execution.finished else ():
            yield f"kflow.{node}.blessed", str(blessing.blessed).lower()
            if model := execution.inputs.get("model"):
                yield f"kflow.{node}.model", model.uri


def evaluation_files(run: Run) -> Iterator[tuple[str, Path, list[str]]]:
    """(node, folder, files) of each finished evaluation: the report, its plots, metrics and verdict."""
    for node, execution in run.executions.items():
        if not execution.finished:
            continue
        for evaluation in execution.outputs_of_type(ModelEvaluation):
            names = [name for name in _EVALUATION_FILES if (evaluation.path / name).is_file()]
            names += sorted(path.name for pattern in _PLOTS for path in evaluation.path.glob(pattern))
            yield node, evaluation.path, names
        for blessing in execution.outputs_of_type(ModelBlessing):
            if (blessing.path / "blessing.json").is_file():
                yield node, blessing.path, ["blessing.json"]


def _log_blessed_models(client: Any, run: Run, run_id: str, register: bool) -> list[tuple[str, str]]:
    """Logs each blessed model's serving SavedModel and registers it under the pipeline's name, once per model:
    a model already registered (a cached run's) is tagged with its version, not uploaded again."""
    registered = []
    for node, execution in run.executions.items():
        if not execution.finished or not any(b.blessed for b in execution.outputs_of_type(ModelBlessing)):
            continue
        model = execution.inputs.get("model")
        serving = Path(model.uri) / "Format-Serving" if model else None
        if serving is None or not serving.is_dir():
            continue
        name = run.pipeline
        if register:
            query = f"name = '{name}' and tag.kflow_model_fingerprint = '{model.fingerprint}'"
            if same := client.search_model_versions(query):
                client.set_tag(run_id, f"kflow.{node}.registered_version", same[0].version)
                log.info("tracking: model %s is already version %s of %s", model.uri, same[0].version, name)
                continue
        client.log_artifacts(run_id, str(serving), artifact_path=f"{node}/model")
        if not register:
            continue
        if not client.search_registered_models(filter_string=f"name = '{name}'"):
            client.create_registered_model(name, description=f"Models blessed by kflow pipeline {name!r}")
        source = f"{client.get_run(run_id).info.artifact_uri}/{node}/model"
        tags = {"kflow_model_fingerprint": model.fingerprint, "kflow_run_id": run.run_id, "kflow_model_uri": model.uri}
        version = client.create_model_version(name, source, run_id=run_id, tags=tags)
        client.set_tag(run_id, f"kflow.{node}.registered_version", version.version)
        registered.append((name, version.version))
    return registered


def _finished_outputs(execution: Any, kind: type) -> list[Any]:
    return execution.outputs_of_type(kind) if execution.finished else []


def _numbers(node: str, values: dict[str, Any]) -> Iterator[tuple[str, float, int]]:
    for key, value in values.items():
        if _is_number(value):
            yield f"{node}.{key}", float(value), 0


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _history(model_run: ModelRun) -> dict[str, Any]:
    try:
        return model_run.history
    except (OSError, ValueError):
        return {}


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
