"""The `transform` section: the Transform between the schema and the Trainer (components/transform,
docs/transform.md), which learns the preprocessing once by a Beam pass over the training split."""

from __future__ import annotations

from pydantic import Field

from kflow.pipeline.dsl.config_model.base import Section


class TransformSection(Section):
    """The preprocessing a tabular dataset's model takes, learnt by the Transform (the standard pipeline adds one
    for the datasets that validate their data: csv, parquet, tfrecord, tfds)."""

    enabled: bool = True
    """false: no transform node; the Trainer learns the tabular preprocessing in each training process, as before."""
    module: str | None = Field(None, min_length=1)
    """Your own preprocessing: a Python file defining preprocessing_fn(inputs, analyzers) -> {name: tensor}, the
    model's inputs, from Keras preprocessing layers given analyzers' full-pass values (docs/transform.md)."""
