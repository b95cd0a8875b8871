"""The Predictor component (a declared pipeline's `type: predict`; `kflow predict`): a model's predictions on data
that may have no label, streamed through Beam."""

from __future__ import annotations

from kflow.pipeline.dsl.artifacts import Examples, InferenceResult, Model, Schema
from kflow.pipeline.dsl.component import Component, ComponentSpec, Parameter


class Predictor(Component):
    """Scores `split` of `examples` (an ingest of data to score: `label: null`, e.g. `split: {score: 1}`) with
    `model`, and writes each record's prediction beside its key as TFRecord Examples, JSON lines and CSV, with the
    class names and a probability per class (a value for a regression). The data is read by the schema the model
    was trained on (`assets/schema.pbtxt`); `schema`, the scored data's own, names its key (`role=key`: the key
    column, else each record's `FILE:LINE`) and lets a missing or retyped column be refused by name."""

    spec = ComponentSpec(
        inputs={"model": Model, "examples": Examples, "schema": Schema},
        outputs={"predictions": InferenceResult},
        parameters={
            "split": Parameter(
                str, optional=True, description="the split of the Examples to score; unset: their only split"
            ),
            "batch_size": Parameter(int, default=256, description="records a model call"),
            "beam_args": Parameter(list, default=[], affects_output=False, description="Apache Beam pipeline options."),
        },
        executor="kflow.components.predictor.executor:run",
        optional_inputs=frozenset({"schema"}),
    )
