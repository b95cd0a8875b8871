"""The Pusher component: a blessed model's SavedModel → a versioned serving folder."""

from __future__ import annotations

from kflow.pipeline.dsl.artifacts import Model, ModelBlessing, PushedModel
from kflow.pipeline.dsl.component import Component, ComponentSpec, Parameter


class Pusher(Component):
    """Copies `model`'s `Format-Serving/` SavedModel to `<push_destination>/<model_name>/<version>/`.

    The version is the next integer after the folder's highest, the layout TensorFlow Serving
    watches. With a `blessing` that did not bless the model it pushes nothing and records why
    (TFX's Pusher); a node can also be skipped altogether with `run_if` on the blessing.
    """

    spec = ComponentSpec(
        inputs={"model": Model, "blessing": ModelBlessing},
        outputs={"pushed_model": PushedModel},
        parameters={
            "push_destination": Parameter(
                str, is_path=True, description="the serving base folder (TF Serving's model base path)"
            ),
            "model_name": Parameter(str, default="model", description="the model's folder under push_destination"),
        },
        executor="kflow.components.pusher.executor:run",
        optional_inputs=frozenset({"blessing"}),
    )
