"""The BulkInferrer component (TFX's BulkInferrer): a model's predictions on a split of Examples."""

from __future__ import annotations

from kflow.pipeline.dsl.artifacts import Examples, InferenceResult, Model, ModelBlessing, Schema
from kflow.pipeline.dsl.component import Component, ComponentSpec, Parameter


class BulkInferrer(Component):
    """Scores `split` of `examples` with `model` (an ingest's split, or a new source through an ingest) and writes
    each record's predictions with its key, as TFRecord Examples, JSON lines and CSV. With a `blessing` that did
    not bless the model it scores nothing and records why (TFX's BulkInferrer); `run_if` skips it instead."""

    spec = ComponentSpec(
        inputs={"examples": Examples, "schema": Schema, "model": Model, "blessing": ModelBlessing},
        outputs={"inference_result": InferenceResult},
        parameters={
            "split": Parameter(str, default="test", description="the split of the Examples to score"),
            "batch_size": Parameter(int, default=256, description="records a model call"),
        },
        executor="kflow.components.bulk_inferrer.executor:run",
        optional_inputs=frozenset({"blessing"}),
    )
