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
from kflow.pipeline.app.latest_blessed import latest_blessed
from kflow.pipeline.app.sections import (
    absolute,
    baseline_parameters,
    evaluator_parameters,
    ingest_parameters,
    trainer_parameters,
)
from kflow.pipeline.app.span_pipeline import SpanIngest, drift_parameters, span_ingest
from kflow.pipeline.app.transform_section import transform_node
from kflow.pipeline.app.tuning import trains_with_tuner, tune_node
from kflow.pipeline.app.warm_start import warm_start_resolver
from kflow.pipeline.dsl.component import Component
from kflow.pipeline.dsl.config import PipelineConfig
from kflow.pipeline.dsl.dag import Pipeline


def build_pipeline(config: PipelineConfig, *, local_runs: bool = False, local_data: bool = True) -> Pipeline:
    """The pipeline of `config`: its declared `components` (declared_pipeline.py), else ingest → train → evaluate.

    `local_runs=True` (`kflow run`, `kflow plan`) lets `evaluator.baseline: latest_blessed` look for the
    latest blessed model among the earlier local runs when the Evaluator is about to run (latest_blessed.py);
    otherwise (compiling for Kubeflow) the built pipeline depends on the config only: a compiled pipeline
    resolves it in a task of its own (`run_time_baselines`). `local_data=False` (compiling: the pods read the
    data) skips the checks that read the data's source here (config_checks.check_config).
    """
    pipeline_dir = Path(config.pipeline_root).expanduser().resolve() / config.name
    if config.components is not None:
        return build_declared_pipeline(config, local_data=local_data, pipeline_dir=pipeline_dir if local_runs else None)
    check_config(config, local_data=local_data)
    dataset = get_dataset(config.data.dataset)
    spans = span_ingest(config, dataset.ingest_component(), dataset.validates_data)  # {SPAN}: span_pipeline.py
    ingest = spans.ingest if spans else dataset.ingest_component()("ingest", parameters=ingest_parameters(config))
    checks = data_checks(config, ingest, spans) if dataset.validates_data else []
    schema = checks[1].outputs["schema"] if checks else ingest.outputs["schema"]
    warm_start = warm_start_resolver(pipeline_dir, config)  # trainer.warm_start: warm_start.py (a bad run id refused)
    anomalies = checks[2].outputs["anomalies"] if checks else None
    transform = transform_node(config, ingest.outputs["examples"], schema)  # tabular data: transform_section.py
    graph = transform.outputs["transform_graph"] if transform else None
    tune = tune_node(config, ingest.outputs["examples"], schema, anomalies, graph)  # `tuner`: the best settings
    train = Trainer(
        "train",
        examples=ingest.outputs["examples"],
        schema=schema,
        anomalies=checks[2].outputs["anomalies"] if checks else None,
        hyperparameters=tune.outputs["hyperparameters"] if tune and trains_with_tuner(config) else None,
        transform_graph=transform.outputs["transform_graph"] if transform else None,
        parameters=trainer_parameters(config),
        run_time_parameters=warm_start if local_runs else None,
    )
    evaluate = Evaluator(
        "evaluate",
        examples=ingest.outputs["examples"],
        schema=schema,
        model=train.outputs["model"],
        model_run=train.outputs["model_run"],
        # The report's data page: the statistics, anomalies marked.
        statistics=checks[0].outputs["statistics"] if checks else None,
        anomalies=checks[2].outputs["anomalies"] if checks else None,
        # With spans: the previous span's statistics, which the validator compares the newest span's with.
        previous_statistics=checks[2].inputs.get("previous_span_statistics") if checks else None,
        parameters={**evaluator_parameters(config), **baseline_parameters(config)},
        run_time_parameters=latest_blessed(pipeline_dir, config.to_dict(), "model")
        if local_runs and config.evaluator.baseline == "latest_blessed"
        else None,
    )
    return Pipeline(
        name=config.name,
        components=[
            *(spans.nodes if spans else [ingest]),
            *checks,
            *([transform] if transform else []),
            *([tune] if tune else []),
            train,
            evaluate,
        ],
        beam_args=config.orchestration_args,
        metadata={
            "config": config.to_dict(),
            "config_file": config.source,
            **(spans.metadata(config) if spans else {}),  # the spans read; what kflow plan says of them
        },
    )


def data_checks(config: PipelineConfig, ingest: Component, spans: SpanIngest | None = None) -> list[Component]:
    """statistics → schema (inferred from Split-train, or data.schema) → validate, TFX's StatisticsGen,
    SchemaGen and ExampleValidator. The Trainer takes the validated schema and waits for the verdict. With spans,
    validate also compares the newest span's statistics with the previous span's (drift)."""
    statistics = StatisticsGen(
        "statistics", examples=ingest.outputs["examples"], parameters={"beam_args": config.beam_args}
    )
    schema = SchemaGen(
        "schema",
        statistics=statistics.outputs["statistics"],
        ingest_schema=ingest.outputs["schema"],
        parameters={"schema_file": absolute(config.data.schema_)},
    )
    validate = ExampleValidator(
        "validate",
        statistics=statistics.outputs["statistics"],
        schema=schema.outputs["schema"],
        span_statistics=spans.newest_statistics.outputs["statistics"] if spans and spans.previous else None,
        previous_span_statistics=spans.previous_statistics.outputs["statistics"] if spans and spans.previous else None,
        parameters={"on_anomaly": config.data.on_anomaly or "fail", **drift_parameters(config, spans)},
    )
    return [statistics, schema, validate]


def run_time_baselines(config: PipelineConfig) -> dict[str, str]:
    """{node id: parameter} that a compiled pipeline feeds with the latest blessed model when it runs
    (a resolver task on Kubeflow: pipeline/kubeflow/baselines.py)."""
    if config.evaluator.baseline != "latest_blessed":
        return {}
    if config.components is None:
        return {"evaluate": "baseline_model_uri"}
    # A declared pipeline's evaluators take evaluator.baseline as the standard one does (declared_pipeline.py), unless
    # one is given its baseline as an input or a parameter.
    return {
        entry.id: "baseline_model_uri"
        for entry in config.components
        if entry.type == "evaluator" and "baseline_model" not in entry.inputs
        and (entry.parameters or {}).get("baseline_model_uri") is None
    }  # fmt: skip
