"""The standard kflow pipeline built from a config: ingest → train → evaluate.

The nodes are always named `ingest`, `train` and `evaluate`, whatever the dataset,
so `--until ingest` means the same thing in every pipeline.
"""

from __future__ import annotations

from pathlib import Path

from components.evaluator import Evaluator
from components.mnist_ingest import MnistIngest
from components.trainer import Trainer
from pipeline.dsl.component import Component
from pipeline.dsl.config import ConfigError, PipelineConfig
from pipeline.dsl.dag import Pipeline

INGEST_COMPONENTS: dict[str, type[Component]] = {"mnist": MnistIngest}


def build_pipeline(config: PipelineConfig) -> Pipeline:
    ingest = _ingest(config)
    trainer = config.trainer
    train = Trainer(
        "train",
        examples=ingest.outputs["examples"],
        schema=ingest.outputs["schema"],
        parameters={
            "model_name": trainer["model"],
            "strategy": trainer["strategy"],
            "epochs": trainer["epochs"],
            "batch_size": trainer["batch_size"],
            "steps_per_epoch": trainer["steps_per_epoch"],
            "optimizer": trainer["optimizer"]["name"],
            "learning_rate": float(trainer["optimizer"]["learning_rate"]),
            "early_stopping_patience": trainer["early_stopping_patience"],
            "shuffle_buffer": trainer["shuffle_buffer"],
            "seed": trainer["seed"],
        },
    )
    evaluate = Evaluator(
        "evaluate",
        examples=ingest.outputs["examples"],
        schema=ingest.outputs["schema"],
        model=train.outputs["model"],
        parameters={key: config.evaluator[key] for key in ("split", "batch_size", "thresholds")},
    )
    return Pipeline(
        name=config.name,
        components=[ingest, train, evaluate],
        beam_args=config.beam_args,
        metadata={"config": config.to_dict(), "config_file": config.source},
    )


def _ingest(config: PipelineConfig) -> Component:
    data = config.data
    component = INGEST_COMPONENTS.get(data["dataset"])
    if component is None:
        raise ConfigError(
            [
                f"data.dataset: {data['dataset']!r} has no ingest component yet "
                f"(available: {', '.join(INGEST_COMPONENTS)})"
            ],
            config.source,
        )
    return component(
        "ingest",
        parameters={
            "source_path": _absolute(data["source"]["path"]),
            "source_format": data["source"]["format"],
            "max_records": data["source"]["max_records"],
            "split": data["split"],
            "shards_per_split": data["shards_per_split"],
            "max_invalid_fraction": float(data["filters"]["max_invalid_fraction"]),
            "beam_args": config.beam_args,
        },
    )


def _absolute(path: str | None) -> str | None:
    """Source paths are relative to the working directory; the cache key needs them absolute."""
    return None if path is None else str(Path(path).expanduser().resolve())
