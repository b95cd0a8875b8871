"""The standard kflow pipeline built from a config: ingest → train → evaluate.

The nodes are always named `ingest`, `train` and `evaluate`, whatever the dataset,
so `--until ingest` means the same thing in every pipeline.
"""

from __future__ import annotations

from pathlib import Path

from kflow.components.datasets import get_dataset
from kflow.components.evaluator import Evaluator
from kflow.components.trainer import Trainer
from kflow.pipeline.app.config_checks import check_config
from kflow.pipeline.dsl.artifacts import Model, ModelBlessing
from kflow.pipeline.dsl.component import Component
from kflow.pipeline.dsl.config import ConfigError, PipelineConfig
from kflow.pipeline.dsl.dag import Pipeline
from kflow.pipeline.runners.run_record import earlier_runs


def build_pipeline(config: PipelineConfig, *, local_runs: bool = False) -> Pipeline:
    """The ingest → train → evaluate pipeline of `config`.

    `local_runs=True` (`kflow run`) lets `evaluator.baseline: latest_blessed` look for the
    latest blessed model among the earlier local runs; otherwise (e.g. when compiling for
    Kubeflow) that baseline resolves to none, so the built pipeline depends on the config only.
    """
    check_config(config)
    ingest = _ingest(config)
    train = Trainer(
        "train",
        examples=ingest.outputs["examples"],
        schema=ingest.outputs["schema"],
        parameters=trainer_parameters(config),
    )
    evaluate = Evaluator(
        "evaluate",
        examples=ingest.outputs["examples"],
        schema=ingest.outputs["schema"],
        model=train.outputs["model"],
        model_run=train.outputs["model_run"],
        parameters={
            **{key: config.evaluator[key] for key in ("split", "batch_size", "thresholds", "slices", "seed")},
            "baseline_model_uri": resolve_baseline(config, local_runs=local_runs),
        },
    )
    return Pipeline(
        name=config.name,
        components=[ingest, train, evaluate],
        beam_args=config.beam_args,
        metadata={"config": config.to_dict(), "config_file": config.source},
    )


def trainer_parameters(config: PipelineConfig) -> dict:
    """The `trainer` section as the Trainer's parameters: the same names, the `optimizer` group
    flattened (`optimizer.name` → `optimizer`, `optimizer.learning_rate` → `learning_rate`) and
    `model` → `model_name`; the task is the dataset's."""
    trainer = dict(config.trainer)
    optimizer, model_name = trainer.pop("optimizer"), trainer.pop("model")
    return {
        **trainer,
        **{name: value for name, value in optimizer.items() if name != "name"},
        "optimizer": optimizer["name"],
        "model_name": model_name,
        "task": config.data["dataset"],
    }


def _ingest(config: PipelineConfig) -> Component:
    data = config.data
    dataset, filters = get_dataset(data["dataset"]), data["filters"]
    parameters = {
        "source_path": _absolute(data["source"]["path"]),
        "source_format": data["source"]["format"],
        "max_records": data["source"]["max_records"],
        "split": data["split"],
        "shards_per_split": data["shards_per_split"],
        "max_invalid_fraction": float(data["filters"]["max_invalid_fraction"]),
        "beam_args": config.beam_args,
    }
    # Dataset-specific filters; a null keeps the component's default (wikitext2 min_chars 101, quora max_chars 1000).
    parameters.update({name: filters[name] for name in dataset.filters if filters.get(name) is not None})
    return dataset.ingest_component()("ingest", parameters=parameters)


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


def _absolute(path: str | None) -> str | None:
    """Source paths are relative to the working directory; the cache key needs them absolute."""
    return None if path is None else str(Path(path).expanduser().resolve())
