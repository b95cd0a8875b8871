"""The standard pipeline's `transform` node: between the schema and the Trainer, for the datasets that validate
their data (the tabular ones), the images (MNIST, an image folder), Quora and WikiText-2, with the options of the
dataset's task that shape what it learns and the config's `transform` section."""

from __future__ import annotations

from typing import Any

from kflow.components.datasets import get_dataset
from kflow.components.datasets.tabular.plan import DATA_OPTIONS
from kflow.components.models import SCALED_BY_TRANSFORM
from kflow.components.transform import Transform
from kflow.pipeline.app.sections import absolute
from kflow.pipeline.dsl.component import Channel
from kflow.pipeline.dsl.config import ConfigError, PipelineConfig
from kflow.pipeline.dsl.config_model import TransformSection

# The datasets whose text preprocessing the Transform learns, and the trainer.model_options that shape it (the
# tasks' own lists, here without importing the tasks: QuoraTask's and WikiText2Task.GRAPH_OPTIONS).
TEXT_OPTIONS = {
    "quora": ("max_tokens", "class_weighting", "ngrams"),
    "wikitext2": ("vocabulary_size", "lowercase", "sequence_length"),
}
# The image datasets: the Transform learns their pixels' scaling, which no trainer.model_options shape.
IMAGE_OPTIONS: dict[str, tuple[str, ...]] = {"mnist": (), "images": ()}
OWN_OPTIONS = {**TEXT_OPTIONS, **IMAGE_OPTIONS}  # the datasets with a preprocessing of their own (not tabular)


def transformed(dataset: str) -> bool:
    """Whether the standard pipeline gives `dataset` a transform node: a tabular dataset's, an image dataset's,
    Quora or WikiText-2."""
    return dataset in OWN_OPTIONS or get_dataset(dataset).validates_data


def scaling_unused(config: PipelineConfig) -> bool:
    """An image dataset whose model takes no learnt scaling: a user's `trainer.module`, or a named model that
    rescales by itself. Its transform node would learn what nothing reads (a pass over every training image: 4 s
    for MNIST here). Unnamed, the model is the dataset's default, a convnet that takes it."""
    trainer = config.trainer
    return config.data.dataset in IMAGE_OPTIONS and bool(
        trainer.module or (trainer.model and trainer.model not in SCALED_BY_TRANSFORM)
    )


def transform_parameters(config: PipelineConfig) -> dict[str, Any]:
    """The Transform's parameters: the dataset, the data options among `trainer.model_options` (the
    preprocessing they shape is learnt by the Transform), the user's `transform.module`, the Beam options."""
    model_options = config.trainer.model_options
    section = config.transform or TransformSection()
    dataset = config.data.dataset if config.data else None
    return {
        **({"dataset": dataset} if dataset else {}),  # a declared pipeline without a data section names its own
        "options": {
            name: value for name, value in model_options.items() if name in OWN_OPTIONS.get(dataset, DATA_OPTIONS)
        },
        "module": absolute(section.module),
        "beam_args": config.beam_args,
    }


def transform_node(config: PipelineConfig, examples: Channel, schema: Channel) -> Transform | None:
    """The `transform` node of a tabular dataset, an image dataset whose model takes the learnt scaling, Quora or
    WikiText-2, unless `transform.enabled` is false."""
    dataset, section = config.data.dataset, config.transform or TransformSection()
    if section.module and (dataset in OWN_OPTIONS or not transformed(dataset)):
        problem = f"transform.module: the {dataset} dataset takes no preprocessing_fn (tabular ones do)"
        raise ConfigError([problem], config.source)
    if not transformed(dataset) or scaling_unused(config):
        return None
    if not section.enabled:
        if section.module:
            raise ConfigError(["transform.module: set, but transform.enabled is false"], config.source)
        return None
    node = Transform("transform", examples=examples, schema=schema, parameters=transform_parameters(config))
    problems = node.check_parameters()  # a module without preprocessing_fn: kflow validate refuses it too
    if problems:
        raise ConfigError(problems, config.source)
    return node


def preprocessing_problems(config: PipelineConfig, facts: Any, not_features: dict[str, str]) -> list[str]:
    """transform.module's preprocessing_fn traced on the columns a sample of the source has (`facts`, but
    `not_features`: the label, the key, the row names), as the Transform traces it after the ingest: a column it names
    that the data lacks, a wrong return value, an exception in the function. Keras loads only when a module is set."""
    module = (config.transform or TransformSection()).module
    if not module or not transformed(config.data.dataset) or config.data.dataset in OWN_OPTIONS:
        return []
    from kflow.components.transform.module_check import preprocessing_problems as unreadable

    if unreadable(absolute(module)):  # no file, bad syntax, no function: the Transform's own check says it
        return []
    from kflow.components.transform.preprocessing_trace import preprocessing_problem

    types = {name: kind for name, kind in facts.types.items() if name not in not_features}
    label = {config.data.label: "the label (data.label)"}
    problem = preprocessing_problem(absolute(module), types, {**not_features, **label})
    return [problem] if problem else []
