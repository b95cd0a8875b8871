"""kflow's Python API: the pipelines of a config, written as code.

    from kflow.pipeline import api

    ingest = api.MnistIngest("ingest", parameters={"source_format": "sklearn_digits"})
    train = api.Trainer("train", examples=ingest.outputs["examples"], schema=ingest.outputs["schema"],
                        parameters={"dataset": "mnist", "model_name": "mnist_convnet", "epochs": 5})
    evaluate = api.Evaluator("evaluate", examples=ingest.outputs["examples"], schema=ingest.outputs["schema"],
                             model=train.outputs["model"], model_run=train.outputs["model_run"],
                             parameters={"thresholds": {"accuracy": {"lower_bound": 0.9}}})
    pipeline = api.Pipeline("digits", [ingest, train, evaluate])
    api.run(pipeline, "runs")                    # as `kflow run`: cached, recorded in runs/digits/<run>/
    api.compile(pipeline, "pipeline.yaml", image="registry.example.com/kflow:0.1.0")   # as `kflow compile`

The nodes are the very classes a config's `components:` names (`type: trainer` is `Trainer`), so a
config and its Python twin build equal pipelines and compile to the same pipeline.yaml. A user
component is a `@component` function (`api.component`) or a `Component` subclass.
Parameters are the components' own (`kflow validate` and the components' docstrings list them);
relative paths should be made absolute by the caller, as the cache key holds them as given.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kflow.components.bulk_inferrer import BulkInferrer
from kflow.components.datasets import DATASETS, get_dataset
from kflow.components.evaluator import Evaluator
from kflow.components.example_validator import ExampleValidator
from kflow.components.predictor import Predictor
from kflow.components.pusher import Pusher
from kflow.components.schema_gen import SchemaGen
from kflow.components.statistics_gen import StatisticsGen
from kflow.components.trainer import Trainer
from kflow.components.transform import Transform
from kflow.pipeline.compiler import KubeflowSettings, compile_pipeline
from kflow.pipeline.compiler.settings import kubeflow_settings
from kflow.pipeline.dsl import artifacts
from kflow.pipeline.dsl.component import Component, ComponentSpec, Parameter
from kflow.pipeline.dsl.dag import Pipeline
from kflow.pipeline.dsl.function_component import Input, Output, component
from kflow.pipeline.runners.beam_dag_runner import BeamDagRunner, PipelineFailed, RunResult
from kflow.pipeline.runners.beam_logs import beam_element_errors_quiet


def run(
    pipeline: Pipeline,
    pipeline_root: str | Path = "runs",
    *,
    enable_cache: bool = True,
    verify_hashes: bool = False,
    beam_args: list[str] | None = None,
) -> RunResult:
    """Runs `pipeline` locally on Apache Beam under `<pipeline_root>/<name>/<run_id>/`; raises PipelineFailed."""
    runner = BeamDagRunner(beam_args=beam_args, enable_cache=enable_cache, verify_hashes=verify_hashes)
    with beam_element_errors_quiet():  # the failure is PipelineFailed's (or Ctrl-C's Cancelled), said once
        return runner.run(pipeline, pipeline_root)


def compile(  # noqa: A001 (the name users know from `kfp.compiler`)
    pipeline: Pipeline,
    package_path: str | Path = "pipeline.yaml",
    *,
    image: str | None = None,
    kubeflow: dict[str, Any] | None = None,
) -> Path:
    """Writes the KFP v2 IR of `pipeline`; `kubeflow` is a config's `kubeflow` section (validated the same way)."""
    section = {**(kubeflow or {}), **({"image": image} if image else {})}
    return compile_pipeline(pipeline, kubeflow_settings(section), package_path)


def _ingests() -> dict[str, str]:
    """{class name: dataset} of every registered dataset's ingest component (MnistIngest, CsvIngest, …)."""
    return {get_dataset(name).ingest.rpartition(":")[2]: name for name in DATASETS}


def __getattr__(name: str) -> Any:
    """A dataset's ingest component by its class name, from the dataset registry, so that a dataset another package
    registers is `api.<its ingest>` too."""
    dataset = _ingests().get(name)
    if dataset is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return get_dataset(dataset).ingest_component()


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "Component",
    "ComponentSpec",
    "Evaluator",
    "ExampleValidator",
    "Input",
    "KubeflowSettings",
    "Output",
    "Parameter",
    "Pipeline",
    "PipelineFailed",
    "RunResult",
    "Pusher",
    "BulkInferrer",
    "Predictor",
    "SchemaGen",
    "StatisticsGen",
    "Trainer",
    "Transform",
    "artifacts",
    "compile",
    "component",
    "run",
    *_ingests(),
]
