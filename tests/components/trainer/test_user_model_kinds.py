"""Keras' usual ways to write a model, as a trainer.module: a `keras.Sequential` (keras.io's MNIST convnet verbatim,
its `keras.Input(shape=(28, 28, 1))` fed MNIST's 28×28 images; one without a `keras.Input`) and a subclassed
`keras.Model` with a `call` of its own. kflow reads a model's graph (its inputs, its head, the serving signature),
which such a model has none of until called: each failed before its first step (`AttributeError: The layer
sequential has never been called and thus has no defined input`), and the convnet, made to train, was then refused
by the Evaluator (`reads inputs of shape 28×28×1; this data's are 28×28`). Now each trains, is blessed and its
serving SavedModel answers as model.keras (a Sequential on a table: test_sequential_on_tables.py).
Real data: MNIST (../shared/datasets), scikit-learn's digits as an image folder, iris."""

from __future__ import annotations

import json

import pytest

from kflow.components.datasets.images.ingest.executor import run as ingest_images
from kflow.components.datasets.mnist.ingest.executor import run as ingest_mnist
from kflow.components.datasets.user_module import UserModuleError, load_module, with_user_module
from kflow.components.evaluator.executor import run as evaluate
from kflow.components.trainer.executor import run as train
from kflow.components.util.schema import load_schema
from kflow.pipeline.dsl.artifacts import Examples, Model, ModelBlessing, ModelEvaluation, ModelRun, Rejects, Schema
from tests.components.datasets.images.image_fixtures import write_digits
from tests.components.datasets.tabular_fixtures import write_iris
from tests.components.trainer.user_models import csv_examples
from tests.conftest import shared_dataset

# keras.io's "Simple MNIST convnet" (examples/vision/mnist_convnet.py), its model and compile as written there, with
# the scaling it does to the arrays before fit as a layer. Its categorical_crossentropy (one-hot labels, as it makes
# them) trains as its sparse twin on kflow's class indices (model_compile.on_class_indices).
KERAS_IO_CONVNET = """\
import keras
from keras import layers

input_shape = (28, 28, 1)


def build_model(schema, options):
    model = keras.Sequential(
        [
            keras.Input(shape=input_shape),
            layers.Rescaling(1 / 255),
            layers.Conv2D(32, kernel_size=(3, 3), activation="relu"),
            layers.MaxPooling2D(pool_size=(2, 2)),
            layers.Conv2D(64, kernel_size=(3, 3), activation="relu"),
            layers.MaxPooling2D(pool_size=(2, 2)),
            layers.Flatten(),
            layers.Dropout(0.5),
            layers.Dense(options["num_classes"], activation="softmax"),
        ]
    )
    model.compile(loss="categorical_crossentropy", optimizer="adam", metrics=["accuracy"])
    return model
"""

UNBUILT_AND_SUBCLASSED = """\
import keras
from keras import layers


@keras.saving.register_keras_serializable(package="user_kinds")
class Tiny(keras.Model):
    def __init__(self, classes, **kwargs):
        super().__init__(**kwargs)
        self.classes = classes
        self.hidden = layers.Dense(32, activation="relu")
        self.out = layers.Dense(classes, activation="softmax")

    def call(self, x):
        if isinstance(x, dict):  # a table's named columns
            x = keras.ops.concatenate([keras.ops.nan_to_num(x[name]) for name in sorted(x)], axis=-1)
        else:
            x = keras.ops.reshape(keras.ops.cast(x, "float32") / 16.0, (-1, 64))
        return self.out(self.hidden(x))

    def get_config(self):
        return {**super().get_config(), "classes": self.classes}


def build_model(schema, options):
    classes = options.get("classes") or options.get("num_classes") or len(options["head"]["classes"])
    if options["kind"] == "subclassed":
        return Tiny(classes)
    return keras.Sequential([layers.Rescaling(1 / 16), layers.Flatten(), layers.Dense(32, activation="relu"),
                             layers.Dense(classes, activation="softmax")])
"""


def trained_and_evaluated(tmp_path, examples, schema, dataset, source, slices=None, **train_options):
    model, model_run = Model(tmp_path / "model"), ModelRun(tmp_path / "run")
    train(dataset=dataset, examples=examples, schema=schema, model=model, model_run=model_run, module="my_model.py",
          module_source=source, seed=1, **train_options)  # fmt: skip
    evaluation, blessing = ModelEvaluation(tmp_path / "evaluation"), ModelBlessing(tmp_path / "blessing")
    result = evaluate(examples=examples, schema=schema, model=model, evaluation=evaluation, blessing=blessing,
                      thresholds={}, slices=slices)  # fmt: skip
    serving = json.loads((evaluation.path / "serving_check.json").read_text())
    assert serving["passed"] and serving["examples"] > 0, serving  # The SavedModel answers as model.keras.
    assert result["blessed"], result
    return evaluation.metrics


def mnist_sample(tmp_path):
    """3,000 of MNIST's images (../shared/datasets), 4:1 train to eval."""
    examples, schema = Examples(tmp_path / "examples"), Schema(tmp_path / "schema")
    ingest_mnist(examples=examples, schema=schema, rejects=Rejects(tmp_path / "rejects"),
                 source_path=str(shared_dataset("mnist") / "mnist.npz"), split={"train": 4, "eval": 1},
                 max_records=3000)  # fmt: skip
    return examples, schema


@pytest.mark.slow  # ~9 s; make test trains a module's subclassed model on images (below)
@pytest.mark.real_data
def test_keras_ios_mnist_convnet_as_written_there_trains_and_is_blessed(tmp_path):
    examples, schema = mnist_sample(tmp_path)
    metrics = trained_and_evaluated(tmp_path, examples, schema, "mnist", KERAS_IO_CONVNET, epochs=2, batch_size=64)
    assert metrics["accuracy"] > 0.8, metrics


@pytest.fixture(scope="module")
def digits(tmp_path_factory):
    root = tmp_path_factory.mktemp("digits")
    examples, schema = Examples(root / "examples"), Schema(root / "schema")
    ingest_images(examples=examples, schema=schema, rejects=Rejects(root / "rejects"),
                  source_path=str(write_digits(root / "images", limit=600)), image={"size": 8})  # fmt: skip
    return examples, schema


# sequential_without_input (~5 s) in make test-all only: make test trains it in test_such_a_model_warm_starts_...
@pytest.mark.parametrize("kind", [pytest.param("sequential_without_input", marks=pytest.mark.slow), "subclassed"])
def test_a_sequential_without_input_and_a_subclassed_model_train_on_images(digits, tmp_path, kind):
    examples, schema = digits
    metrics = trained_and_evaluated(tmp_path, examples, schema, "images", UNBUILT_AND_SUBCLASSED, epochs=8,
                                    batch_size=32, learning_rate=0.01, model_options={"kind": kind})  # fmt: skip
    assert metrics["accuracy"] > 0.7, metrics


@pytest.fixture(scope="module")
def iris(tmp_path_factory):
    root = tmp_path_factory.mktemp("iris")
    return csv_examples(root, write_iris(root / "iris.csv"), "species")


@pytest.mark.slow  # ~8 s; make test trains a subclassed model on images and a table's model of unnamed inputs
def test_a_subclassed_model_takes_a_tables_named_columns(iris, tmp_path):
    examples, schema = iris
    options = {"kind": "subclassed"}
    metrics = trained_and_evaluated(tmp_path, examples, schema, "csv", UNBUILT_AND_SUBCLASSED, epochs=30,
                                    batch_size=16, learning_rate=0.01, model_options=options)  # fmt: skip
    assert metrics["accuracy"] > 0.8, metrics


def test_an_image_models_head_of_other_classes_is_one_line_before_training(digits, tmp_path):
    """An image task now states its classes to the model contract: a head of 5 for 10 digits was trained, then
    failed at the export (`the model outputs 5 scores a row for 10 classes`)."""
    from kflow.components.datasets.images.task import ImagesTask

    examples, schema = digits
    task = with_user_module(ImagesTask, load_module(UNBUILT_AND_SUBCLASSED, "my_model.py"))(
        load_schema(schema.file), None, {"kind": "sequential_without_input", "classes": 5}
    )
    task.prepare(examples, tmp_path / "assets")
    with pytest.raises(UserModuleError) as refused:
        task.build_model()
    assert "the model outputs 5 value(s) a record; the task predicts 10 classes" in str(refused.value)


@pytest.mark.parametrize("kind", ["sequential_without_input", pytest.param("subclassed", marks=pytest.mark.slow)])
def test_such_a_model_warm_starts_from_its_earlier_build(digits, tmp_path, caplog, kind):
    """Keras names a Sequential's input and layers anew in each build (`input_layer_2`, `keras_tensor`;
    `rescaling`, `rescaling_1`): a warm start compared those names and refused the same model's earlier self
    (`the inputs differ`, `layer sequential/'rescaling' is new`). Unnamed inputs and a nested model's layers are
    now matched by place."""
    import logging

    examples, schema = digits
    options = {"dataset": "images", "examples": examples, "schema": schema, "module": "my_model.py",
               "module_source": UNBUILT_AND_SUBCLASSED, "epochs": 1, "batch_size": 32, "learning_rate": 0.01,
               "seed": 1, "model_options": {"kind": kind}}  # fmt: skip
    first = Model(tmp_path / "first")
    train(model=first, model_run=ModelRun(tmp_path / "first_run"), **options)
    scratch = ModelRun(tmp_path / "scratch_run")
    train(model=Model(tmp_path / "scratch"), model_run=scratch, **options)
    warm = ModelRun(tmp_path / "warm_run")
    with caplog.at_level(logging.INFO, logger="kflow.trainer"):
        summary = train(model=Model(tmp_path / "warm"), model_run=warm, warm_start="latest_blessed",
                        warm_start_model_uri=str(first.uri), **options)  # fmt: skip
    assert f"warm-started from {first.uri}" in caplog.text
    assert summary["warm_started_from"] == warm.history["warm_started_from"] == str(first.uri)
    # The earlier model's weights carried: its first epoch starts where the first training ended.
    assert warm.history["per_epoch"][0]["loss"] < scratch.history["per_epoch"][0]["loss"]
    if kind == "sequential_without_input":
        # Another model (other layers) under latest_blessed: trained from scratch, and its summary says no start
        # (it said the model resolved: `warm_started_from` a model it had passed over).
        other = {**options, "model_options": {"kind": "subclassed"}}
        passed_over = train(model=Model(tmp_path / "other"), model_run=ModelRun(tmp_path / "other_run"),
                            warm_start="latest_blessed", warm_start_model_uri=str(first.uri), **other)  # fmt: skip
        assert "warm_started_from" not in passed_over and passed_over["start_step"] == 0
        assert "train: from scratch (trainer.warm_start: latest_blessed)" in caplog.text


def test_an_image_input_of_another_size_is_one_line_naming_its_line_before_training(digits, tmp_path):
    """keras.io's convnet, its `keras.Input(shape=(28, 28, 1))` as written there, on a folder of 8×8 digits: Keras
    failed at the first step (`expected shape=(None, 28, 28, 1), found shape=(None, 8, 8)`), naming no line of the
    module and no fix. Now one line names the Input's line, the data's image shape and both fixes."""
    examples, schema = digits
    model_run = ModelRun(tmp_path / "run")
    with pytest.raises(UserModuleError) as refused:
        train(dataset="images", examples=examples, schema=schema, model=Model(tmp_path / "model"), model_run=model_run,
              module="my_model.py", module_source=KERAS_IO_CONVNET, epochs=1, batch_size=32, seed=1)  # fmt: skip
    message = str(refused.value)
    line = int(message.removeprefix("trainer.module: my_model.py:").split(":")[0])
    assert KERAS_IO_CONVNET.splitlines()[line - 1].strip() == "keras.Input(shape=input_shape),", message
    assert "\n" not in message and "this data's are 8×8×1" in message, message
    assert 'keras.Input(shape=options["image_shape"])' in message and "data.image: {size: [28, 28]}" in message
    assert not (model_run.path / "history.json").exists()  # refused before the first step


def test_an_error_of_keras_in_the_module_is_one_plain_line(digits, tmp_path):
    """Keras bolds its errors' messages with terminal escapes, which a one-line error showed as `\\x1b[1m`."""
    from kflow.components.datasets.images.task import ImagesTask

    source = (
        "import keras\n\n\ndef build_model(schema, options):\n"
        "    base_input = keras.Input(shape=(8, 8, 3))\n"
        "    base = keras.Model(base_input, keras.layers.Conv2D(4, 3)(base_input))\n"
        "    inputs = keras.Input(shape=(8, 8))\n"
        "    x = keras.layers.Flatten()(base(inputs))\n"
        "    return keras.Model(inputs, keras.layers.Dense(10, activation='softmax')(x))\n"
    )
    examples, schema = digits
    task = with_user_module(ImagesTask, load_module(source, "my_model.py"))(load_schema(schema.file))
    task.prepare(examples, tmp_path / "assets")
    with pytest.raises(UserModuleError) as refused:
        task.build_model()
    message = str(refused.value)
    assert message.startswith("trainer.module: my_model.py:8: ValueError: ") and "Functional.call()" in message, message
    assert "\x1b" not in message


UNNAMED_INPUTS = """\
import keras


def build_model(schema, options):
    inputs = {f["name"]: keras.Input(shape=(1,)) for f in options["features"]}
    x = keras.layers.Concatenate()([keras.layers.Normalization(mean=f["mean"], variance=f["variance"])(
        inputs[f["name"]]) for f in options["features"]])
    x = keras.layers.Dense(16, activation="relu")(x)
    return keras.Model(inputs, keras.layers.Dense(len(options["head"]["classes"]), activation="softmax")(x))
"""


def test_a_tables_model_of_unnamed_inputs_serves(iris, tmp_path):
    """A dict of `keras.Input(shape=(1,))` without names: the export named the signature's arguments by the tensors
    as built (`keras_tensor_3`), the serving check by the model as loaded (`input_layer_1`), and refused it; both
    now take the Input layers' names, which the saved model keeps."""
    examples, schema = iris
    metrics = trained_and_evaluated(tmp_path, examples, schema, "csv", UNNAMED_INPUTS, epochs=20, batch_size=16,
                                    learning_rate=0.01)  # fmt: skip
    assert metrics["accuracy"] > 0.8, metrics


def test_a_subclassed_model_called_once_in_build_model_is_still_made_functional(digits, tmp_path):
    """Called on a `keras.Input`, a subclassed model says its `input` but has no `outputs`: it is wrapped too."""
    from kflow.components.datasets.images.task import ImagesTask

    source = UNBUILT_AND_SUBCLASSED.replace(
        '        return Tiny(classes)', '        tiny = Tiny(classes)\n        tiny(keras.Input((8, 8, 1)))\n'
        '        return tiny')  # fmt: skip
    examples, schema = digits
    task = with_user_module(ImagesTask, load_module(source, "my_model.py"))(
        load_schema(schema.file), None, {"kind": "subclassed"}
    )
    task.prepare(examples, tmp_path / "assets")
    model = task.build_model()
    assert model.outputs[0].shape[-1] == 10 and type(model).__name__ == "Functional"


# keras.io's "Image classification from scratch": random augmentation in the model, before its rescaling.
AUGMENTING = """\
import keras
from keras import layers


def build_model(schema, options):
    inputs = keras.Input(shape=tuple(options["image_shape"]))
    x = layers.RandomRotation(0.1)(inputs)
    x = layers.RandomZoom(0.1)(x)
    x = layers.Rescaling(1.0 / 255)(x)
    x = layers.Conv2D(16, 3, padding="same", activation="relu")(x)
    x = layers.GlobalAveragePooling2D()(x)
    return keras.Model(inputs, layers.Dense(options["num_classes"], activation="softmax")(x))
"""


def test_a_model_that_augments_its_images_serves_them_unaugmented(digits, tmp_path):
    """Keras' random layers augment unless told `training=False`: the serving SavedModel called the model without
    it, so each request was rotated and zoomed anew (a user's trial: `NOT BLESSED; serving_predictions 0.0013 <=
    0.0001`, nothing said why). It serves as `predict` scores, the same answer each time."""
    import keras
    import numpy as np
    import tensorflow as tf

    from kflow.components.datasets.task import task_for_model

    examples, schema = digits
    trained_and_evaluated(tmp_path, examples, schema, "images", AUGMENTING, epochs=2, batch_size=32)  # served alike
    model = Model(tmp_path / "model")
    task = task_for_model(model, model.training_schema_file)
    (images, _), *_ = task.dataset(examples, "eval", batch_size=16, training=False, seed=0)
    serving = tf.saved_model.load(str(model.serving_uri)).signatures["serving_default"]
    ((name, spec),) = serving.structured_input_signature[1].items()
    images = np.reshape(images, (-1, *spec.shape[1:])).astype(spec.dtype.as_numpy_dtype)
    first, second = (serving(**{name: tf.constant(images)})["scores"].numpy() for _ in range(2))
    np.testing.assert_array_equal(first, second)
    expected = keras.saving.load_model(model.keras_file).predict_on_batch(images)
    np.testing.assert_allclose(first, expected, rtol=1e-5, atol=1e-6)
