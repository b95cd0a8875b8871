"""The pipeline of a config: the standard ingest → train → evaluate, or the DAG it declares.

The standard nodes are always named `ingest`, `train` and `evaluate`, whatever the dataset,
so `--until ingest` means the same thing in every standard pipeline; a dataset that validates
its data (csv) adds `statistics`, `schema` and `validate` between ingest and train.
"""

from __future__ import annotations

from pathlib import Path

from kflow.components.datasets import get_dataset
from kflow.components.evaluator import Evaluator
from kflow.components.example_validator import ExampleValidator
from kflow.components.schema_gen import SchemaGen
from kflow.components.statistics_gen import StatisticsGen
from kflow.components.trainer import Trainer
from kflow.pipeline.app.config_checks import check_config
from kflow.pipeline.app.declared_pipeline import build_declared_pipeline
from kflow.pipeline.app.sections import absolute, evaluator_parameters, ingest_parameters, trainer_parameters
from kflow.pipeline.dsl.artifacts import Model, ModelBlessing
from kflow.pipeline.dsl.component import Component
from kflow.pipeline.dsl.config import ConfigError, PipelineConfig
from kflow.pipeline.dsl.dag import Pipeline
from kflow.pipeline.runners.run_record import earlier_runs


def build_pipeline(config: PipelineConfig, *, local_runs: bool = False) -> Pipeline:
    """The pipeline of `config`: its declared `components` (declared_pipeline.py), else ingest → train → evaluate.

    `local_runs=True` (`kflow run`) lets `evaluator.baseline: latest_blessed` look for the
    latest blessed model among the earlier local runs; otherwise (e.g. when compiling for
    Kubeflow) the built pipeline depends on the config only and leaves that baseline unset:
    a compiled pipeline resolves it at run time (`run_time_baselines`).
    """
    if config.components is not None:
        return build_declared_pipeline(config)
    check_config(config)
    dataset = get_dataset(config.data["dataset"])
    ingest = dataset.ingest_component()("ingest", parameters=ingest_parameters(config))
    checks = data_checks(config, ingest) if dataset.validates_data else []
    schema = checks[1].outputs["schema"] if checks else ingest.outputs["schema"]
    train = Trainer(
        "train",
        examples=ingest.outputs["examples"],
        schema=schema,
        anomalies=checks[2].outputs["anomalies"] if checks else None,
        parameters=trainer_parameters(config),
    )
    evaluate = Evaluator(
        "evaluate",
        examples=ingest.outputs["examples"],
        schema=schema,
        model=train.outputs["model"],
        model_run=train.outputs["model_run"],
        parameters={
            **evaluator_parameters(config),
            "baseline_model_uri": resolve_baseline(config, local_runs=local_runs),
        },
    )
    return Pipeline(
        name=config.name,
        components=[ingest, *checks, train, evaluate],
        beam_args=config.orchestration_args,
        metadata={"config": config.to_dict(), "config_file": config.source},
    )


def data_checks(config: PipelineConfig, ingest: Component) -> list[Component]:
    """statistics → schema (inferred from Split-train, or data.schema) → validate, TFX's StatisticsGen,
    SchemaGen and ExampleValidator. The Trainer takes the validated schema and waits for the verdict."""
    statistics = StatisticsGen(
        "statistics", examples=ingest.outputs["examples"], parameters={"beam_args": config.beam_args}
    )
    schema = SchemaGen(
        "schema",
        statistics=statistics.outputs["statistics"],
        ingest_schema=ingest.outputs["schema"],
        parameters={"schema_file": absolute(config.data.get("schema"))},
    )
    validate = ExampleValidator(
        "validate",
        statistics=statistics.outputs["statistics"],
        schema=schema.outputs["schema"],
        parameters={"on_anomaly": config.data.get("on_anomaly") or "fail"},
    )
    return [statistics, schema, validate]


def resolve_baseline(config: PipelineConfig, *, local_runs: bool = True) -> str | None:
    """The Model URI the Evaluator's change thresholds compare against (evaluator.baseline).

    `latest_blessed` (TFX's LatestBlessedModelResolver): the model evaluated by the newest
    earlier run of this pipeline whose `evaluate` blessed it; `none`; or a Model folder.
    Resolved when the pipeline is built, so the URI is a parameter of the Evaluator and
    part of its cache key: a verdict is reused only against the same baseline.
    """
    baseline = config.evaluator["baseline"]
    if baseline == "none" or (baseline == "latest_blessed" and not local_runs):
        return None
    if baseline != "latest_blessed":
        path = Path(baseline).expanduser().resolve()
        if not (path / "model.keras").is_file():
            raise ConfigError(
                [
                    f"evaluator.baseline: {baseline!r} is not a Model folder (no model.keras); "
                    "use latest_blessed, none or a Model artifact path such as runs/demo/<run_id>/train/model"
                ],
                config.source,
            )
        return str(path)
    return latest_blessed_model(Path(config.pipeline_root).expanduser().resolve() / config.name, config.to_dict())


def run_time_baselines(config: PipelineConfig) -> dict[str, str]:
    """{node id: parameter} that a compiled pipeline feeds with the latest blessed model when it runs
    (a resolver task on Kubeflow: pipeline/kubeflow/baselines.py)."""
    if config.components is None and config.evaluator["baseline"] == "latest_blessed":
        return {"evaluate": "baseline_model_uri"}
    return {}


def latest_blessed_model(pipeline_dir: Path, config: dict | None = None) -> str | None:
    """The URI of the model blessed by the newest run under `pipeline_dir`, or None.

    When that run had the same `data` and `trainer` config as `config`, this run evaluates
    the same (cached) model again: comparing it with itself says nothing, so it keeps the
    baseline that run was blessed against, and a re-run stays fully cached.
    """
    for run in earlier_runs(pipeline_dir):
        for execution in run.executions.values():
            blessings, models = execution.outputs_of_type(ModelBlessing), execution.inputs_of_type(Model)
            if not execution.finished or len(blessings) != 1 or len(models) != 1:
                continue
            (blessing,), (model,) = blessings, models
            if (blessing.path / "BLESSED").exists() and model.path.is_dir():
                earlier = run.metadata.get("config", {})
                if config is not None and all(earlier.get(key) == config.get(key) for key in ("data", "trainer")):
                    return execution.parameters.get("baseline_model_uri")
                return model.uri
    return None
