"""The standard pipeline's `transform` node: between the schema and the Trainer, for the datasets that validate
their data (the tabular ones), with the dataset task's data options and the config's `transform` section."""

from __future__ import annotations

from typing import Any

from kflow.components.datasets import get_dataset
from kflow.components.datasets.tabular.plan import DATA_OPTIONS
from kflow.components.transform import Transform
from kflow.pipeline.app.sections import absolute
from kflow.pipeline.dsl.component import Channel
from kflow.pipeline.dsl.config import ConfigError, PipelineConfig


def transform_parameters(config: PipelineConfig) -> dict[str, Any]:
    """The Transform's parameters: the dataset, the data options among `trainer.model_options` (the
    preprocessing they shape is learnt by the Transform), the user's `transform.module`, the Beam options."""
    model_options = config.trainer.get("model_options") or {}
    section = config.transform or {}
    dataset = (config.data or {}).get("dataset")
    return {
        **({"dataset": dataset} if dataset else {}),  # a declared pipeline without a data section names its own
        "options": {name: value for name, value in model_options.items() if name in DATA_OPTIONS},
        "module": absolute(section.get("module")),
        "beam_args": config.beam_args,
    }


def transform_node(config: PipelineConfig, examples: Channel, schema: Channel) -> Transform | None:
    """The `transform` node of a dataset that validates its data, unless `transform.enabled` is false."""
    section = config.transform or {}
    if not get_dataset(config.data["dataset"]).validates_data:
        if section.get("module"):
            dataset = config.data["dataset"]
            raise ConfigError(
                [f"transform.module: the {dataset} dataset takes no transform (tabular ones do)"], config.source
            )
        return None
    if section.get("enabled") is False:
        if section.get("module"):
            raise ConfigError(["transform.module: set, but transform.enabled is false"], config.source)
        return None
    node = Transform("transform", examples=examples, schema=schema, parameters=transform_parameters(config))
    problems = node.check_parameters()  # a module without preprocessing_fn: kflow validate refuses it too
    if problems:
        raise ConfigError(problems, config.source)
    return node
