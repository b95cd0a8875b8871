"""The config's `tuner` section as the Tuner's parameters, and the standard pipeline's `tune` node.

With a `tuner` section the standard pipeline runs `tune` before `train` on the same Examples and schema, and the
Trainer takes its `hyperparameters`; in a declared pipeline a `type: tuner` node takes the section as its
defaults and a trainer node wires `inputs: {hyperparameters: <tuner>.hyperparameters}`.
"""

from __future__ import annotations

from typing import Any

from kflow.components.datasets.module_imports import module_parameters
from kflow.components.datasets.user_module import module_problems
from kflow.components.tuner import Tuner
from kflow.pipeline.app.sections import trainer_parameters
from kflow.pipeline.dsl.component import Channel
from kflow.pipeline.dsl.config import PipelineConfig, as_data

TUNE_NODE = "tune"


def tuner_parameters(config: PipelineConfig) -> dict[str, Any]:
    """The `tuner` section as the Tuner's parameters; the trials start from the `trainer` section's parameters."""
    # Unset (null) settings left out, as the Trainer's defaults (a compiled pipeline's parameters hold no nulls).
    # Trials train from scratch: a warm start is resolved for the Trainer's node only, when the run starts.
    trainer = {
        name: value
        for name, value in trainer_parameters(config).items()
        if value is not None and not name.startswith("warm_start")
    }
    module = trainer.get("module")
    if module and not module_problems(module):  # read now, as the Trainer reads it (its source is in the cache key)
        trainer.update(module_parameters(module))
    tuner = config.tuner
    if tuner is None:
        return {"trainer": trainer}
    return {
        "search_space": as_data(tuner)["search_space"],  # {field: {kind: values}}, as the config writes it
        "algorithm": tuner.algorithm,
        "max_trials": tuner.max_trials,
        "max_time": tuner.max_time,
        "objective_metric": tuner.objective.metric,
        "objective_direction": tuner.objective.direction,
        "parallel_trials": tuner.parallel_trials,
        "trial_epochs": tuner.trial_epochs,
        "seed": tuner.seed,
        "trainer": trainer,
    }


def tune_node(
    config: PipelineConfig,
    examples: Channel,
    schema: Channel,
    anomalies: Channel | None = None,
    transform_graph: Channel | None = None,
) -> Tuner | None:
    """The standard pipeline's `tune` node when the config has a `tuner` section, else None; it waits for the
    data's verdict (`anomalies`) where there is one, and its trials take the Transform's graph, as the Trainer."""
    if config.tuner is None:
        return None
    return Tuner(
        TUNE_NODE,
        examples=examples,
        schema=schema,
        anomalies=anomalies,
        transform_graph=transform_graph,
        parameters=tuner_parameters(config),
    )


def trains_with_tuner(config: PipelineConfig) -> bool:
    """Whether the standard pipeline's Trainer takes the `tune` node's best settings: `trainer.hyperparameters`
    tuner, or null with a `tuner` section; `config` trains with the trainer section's own while the search runs."""
    return config.tuner is not None and config.trainer.hyperparameters != "config"
