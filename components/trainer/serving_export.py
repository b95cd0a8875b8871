"""The serving SavedModel (`Format-Serving/`), what a Pusher ships and a server loads.

`serving_default` takes the raw features, as the model does. A classifier's signature answers as TF Serving's
classification signature does: `scores` (one column per class) and `classes` (the class names, the same for every
row), and `assets/classes.txt` lists the names, one a line, in the scores' column order, so that a client needs no
kflow code to name a prediction. Other models (a regression, a masked LM) keep their one output.

Where the task can read Examples without a label (`Task.inputs`: the tabular datasets), a second signature,
`serve_examples`, takes serialized `tf.Example`s (`examples`: a string a row), as TFX's serving signatures do: the
task's parsing, then the same model and outputs.

The SavedModel's `assets/` also carries what reads data for it (the Model's assets: `task.json`, the schema it was
trained on, the task's preprocessing) and `inputs.json`, {feature: the signature's name for it}: a pushed folder is
enough for `kflow predict` to score new data with it.
"""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import keras
import tensorflow as tf
from keras.src.export.export_utils import get_input_signature  # what `model.export` itself uses

from kflow.components.datasets.task import Task
from kflow.components.util.predictions import INPUTS_FILE, serving_names
from kflow.pipeline.dsl.artifacts import Model

log = logging.getLogger("kflow.trainer")
CLASSES_FILE = Model.CLASSES_FILE
EXAMPLES_SIGNATURE = "serve_examples"  # serialized tf.Examples in (Task.inputs parses them), the same outputs


class ClassNames(keras.layers.Layer):
    """The class names, one row per row of scores: a constant for the signature, not part of the saved model."""

    def __init__(self, names: list[str], **kwargs):
        super().__init__(**kwargs)
        self.names = list(names)

    def call(self, scores):
        return tf.tile(tf.constant([self.names]), [tf.shape(scores)[0], 1])

    def compute_output_spec(self, scores):
        return keras.KerasTensor((scores.shape[0], len(self.names)), dtype="string")


def write_classes(assets: Path, classes: list[str] | None) -> None:
    """The class names beside the model (`assets/classes.txt`), for an export in another process to find."""
    if classes:
        assets.mkdir(parents=True, exist_ok=True)
        (assets / CLASSES_FILE).write_text("".join(f"{name}\n" for name in classes))


def examples_parser(task: Any) -> Callable[[tf.Tensor], Any] | None:
    """The task's parsing of serialized Examples without a label, when it has one (`Task.inputs`) and it needs no op
    library beyond TensorFlow's (a server loading the SavedModel has none: WikiText-2's WordPiece ops), else None."""
    return task.inputs if type(task).inputs is not Task.inputs and not task.op_libraries else None


def write_serving(
    keras_model: keras.Model,
    path: Path,
    classes: list[str] | None,
    model_assets: Path | None = None,
    parse: Callable[[tf.Tensor], Any] | None = None,
) -> None:
    """Exports `keras_model` as the serving SavedModel at `path` (with the class names, for a classifier), with
    the files of `model_assets` (the Model's assets) and the signature's input names in its `assets/`; `parse`
    (serialized Examples → the model's inputs) adds the `serve_examples` signature."""
    served = keras_model
    if classes:
        scores = keras_model.output
        if scores.shape[-1] != len(classes):
            raise ValueError(f"the model outputs {scores.shape[-1]} scores a row for {len(classes)} classes")
        outputs = {"scores": scores, "classes": ClassNames(classes, name="classes")(scores)}
        served = keras.Model(keras_model.input, outputs)
    archive = keras.export.ExportArchive()
    names = serving_names(served)
    signature = get_input_signature(served)
    if names:  # safe names for the signature's arguments, whatever the model's Input layers are called
        signature = [{key: keras.InputSpec(shape=spec.shape, dtype=spec.dtype, name=names[key])
                      for key, spec in signature[0].items()}]  # fmt: skip
    # Called in inference mode, as `predict` calls it: a layer's `training` defaults to what its `call` says, True
    # for Keras' random augmentations (keras.io's RandomFlip, RandomRotation): each request was augmented anew.
    archive.track(served)

    def serve(inputs: Any) -> Any:  # one argument, the model's inputs (a functional model's, Keras' export's)
        return served(inputs, training=False)

    archive.add_endpoint("serve", serve, signature)  # the first: serving_default
    if parse is not None:
        taken = list(served.input) if isinstance(served.input, dict) else None

        def from_examples(examples: tf.Tensor) -> Any:
            inputs = parse(examples)
            return served({name: inputs[name] for name in taken} if taken is not None else inputs, training=False)

        try:
            archive.add_endpoint(EXAMPLES_SIGNATURE, from_examples, [tf.TensorSpec([None], tf.string, name="examples")])
        except Exception as error:  # a user's model that takes other inputs than the task parses: no such signature
            log.warning("the serving model has no %s signature: %s", EXAMPLES_SIGNATURE, str(error).splitlines()[0])
    archive.write_out(str(path), verbose=False)
    assets = Path(path) / "assets"
    assets.mkdir(exist_ok=True)
    write_classes(assets, classes)
    for source in sorted(Path(model_assets).iterdir()) if model_assets is not None else []:
        if source.is_file() and not (assets / source.name).exists():  # the SavedModel's own assets first
            shutil.copyfile(source, assets / source.name)
    if names:  # a model keeps its features' names; the signature takes safe ones
        (assets / INPUTS_FILE).write_text(json.dumps(names, indent=1, sort_keys=True) + "\n")
