"""Your own model (trainer.module), checked before training: a model the Evaluator could not load (a Lambda layer, an
unregistered custom layer) is refused before the first step, naming the layer's line; the usual Keras binary
head, Dense(1, activation="sigmoid"), trains, evaluates and serves. Real tables: scikit-learn's iris and breast
cancer data."""

from __future__ import annotations

import json

import keras
import numpy as np
import pytest

from kflow.components.datasets.tabular.task import TabularTask
from kflow.components.datasets.user_module import UserModuleError, load_module, with_user_module
from kflow.components.evaluator.executor import run as evaluate
from kflow.components.trainer.executor import run as train
from kflow.components.util.schema import load_schema
from kflow.pipeline.dsl.artifacts import Model, ModelBlessing, ModelEvaluation, ModelRun
from tests.components.datasets.tabular_fixtures import write_iris
from tests.components.trainer.user_models import SOFTMAX, csv_examples, module_source, write_cancer


@pytest.fixture(scope="module")
def iris(tmp_path_factory):
    root = tmp_path_factory.mktemp("iris")
    return csv_examples(root, write_iris(root / "iris.csv"), "species")


@pytest.fixture(scope="module")
def cancer(tmp_path_factory):
    root = tmp_path_factory.mktemp("cancer")
    return csv_examples(root, write_cancer(root / "cancer.csv"), "diagnosis")


def user_task(examples, schema, source, tmp_path, model_options=None, imports=None):
    task = with_user_module(TabularTask, load_module(source, "my_model.py", imports))(load_schema(schema.file), None,
                                                                                      model_options)  # fmt: skip
    task.prepare(examples, tmp_path / "assets")
    return task


def line_of(source, number):
    return source.splitlines()[number - 1]


def refusal_line(message, source):
    """The line of `source` a `trainer.module: my_model.py:LINE: …` refusal names."""
    assert message.startswith("trainer.module: my_model.py:") and "\n" not in message, message
    return line_of(source, int(message.split("my_model.py:")[1].split(":")[0]))


# --- the model the Evaluator could not load: refused before the first step -------------------------------------------

LAMBDA = "keras.layers.Lambda(lambda t: t * 2.0)(x)"
UNREGISTERED = ("Twice()(x)", "\n\nclass Twice(keras.layers.Layer):\n    def call(self, x):\n        return x * 2.0\n")


@pytest.mark.parametrize(
    ("layer", "extra", "said", "created"),
    [
        (LAMBDA, "", "layer 'lambda' is a keras.layers.Lambda", "keras.layers.Lambda("),
        (*UNREGISTERED, "layer 'twice' is of the class Twice, which Keras cannot find", "Twice()(x)"),
    ],
    ids=["lambda", "unregistered"],
)
def test_a_model_the_evaluator_could_not_load_is_refused_before_the_first_step(
    iris, tmp_path, layer, extra, said, created
):
    examples, schema = iris
    source = module_source(layer=layer, extra=extra)
    model, model_run = Model(tmp_path / "model"), ModelRun(tmp_path / "run")
    with pytest.raises(UserModuleError) as refused:
        train(examples=examples, schema=schema, model=model, model_run=model_run, dataset="csv", module="my_model.py",
              module_source=source, epochs=50, batch_size=16)  # fmt: skip
    message = str(refused.value)
    assert said in message and "register_keras_serializable" in message
    assert created in refusal_line(message, source)  # The layer's own line, not build_model's.
    assert not model.keras_file.exists()
    assert not (model_run.path / "history.json").exists()  # No epoch ran.
    assert not list(model_run.path.rglob("*tfevents*"))


def test_a_registered_custom_layer_and_a_nested_lambda_are_told_apart(iris, tmp_path):
    examples, schema = iris
    registration = "@keras.saving.register_keras_serializable('mine')\nclass Twice"
    registered = UNREGISTERED[1].replace("class Twice", registration)
    task = user_task(examples, schema, module_source(layer="Twice()(x)", extra=registered), tmp_path)
    assert task.build_model().count_params() > 0  # Registered: it loads back, so it trains.
    nested = "keras.Sequential([keras.layers.Dense(4), keras.layers.Lambda(lambda t: t)], name='block')(x)"
    task = user_task(examples, schema, module_source(layer=nested), tmp_path / "nested")
    with pytest.raises(UserModuleError, match="layer 'lambda.*' is a keras.layers.Lambda"):
        task.build_model()


# --- the final activation against the task and the loss --------------------------------------------------------------


# build_model compiles its model with a loss of logits, as Keras code does where it builds one (model_compile.py).
COMPILED_FROM_LOGITS = """

_build = build_model


def build_model(schema, options):
    model = _build(schema, options)
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model
"""


@pytest.mark.parametrize(
    ("head", "extra", "said"),
    [
        ('keras.layers.Dense(len(options["head"]["classes"]))(x)', "", "ends in activation 'linear'"),
        ('keras.layers.Dense(4, activation="softmax")(x)', "", 'end in Dense(3, activation="softmax")'),
        (SOFTMAX, "\ndef loss():\n    return keras.losses.SparseCategoricalCrossentropy(from_logits=True)\n",
         "takes logits (from_logits=True)"),
        (SOFTMAX, COMPILED_FROM_LOGITS, "takes logits (from_logits=True)"),
    ],
    ids=["logits", "units", "from_logits", "compiled_from_logits"],
)  # fmt: skip
def test_a_head_that_does_not_fit_the_task_or_the_loss_is_refused_naming_its_line(iris, tmp_path, head, extra, said):
    examples, schema = iris
    source = module_source(head=head, extra=extra)
    task = user_task(examples, schema, source, tmp_path)
    with pytest.raises(UserModuleError) as refused:
        task.build_model()
    assert said in str(refused.value)
    assert "outputs = keras.layers.Dense(" in refusal_line(str(refused.value), source)  # The head, not the def.


def test_a_model_of_two_outputs_is_one_line_before_training(iris, tmp_path):
    """Keras trains a model of several outputs on as many labels; the task has one (a traceback of Keras' at the
    first step, before)."""
    examples, schema = iris
    heads = '[keras.layers.Dense(3, activation="softmax")(x), keras.layers.Dense(1)(x)]'
    source = module_source(head=heads)
    task = user_task(examples, schema, source, tmp_path)
    with pytest.raises(UserModuleError) as refused:
        task.build_model()
    assert "the model has 2 outputs; kflow trains, evaluates and serves a model of one output" in str(refused.value)
    assert refusal_line(str(refused.value), source).startswith("def build_model")


# --- a binary task's Dense(1, activation="sigmoid") ----------------------------------------------------------------

SIGMOID = 'keras.layers.Dense(1, activation="sigmoid")(x)'


def test_a_one_unit_sigmoid_head_trains_evaluates_and_serves_a_binary_task(cancer, tmp_path):
    examples, schema = cancer
    model, model_run = Model(tmp_path / "model"), ModelRun(tmp_path / "run")
    train(examples=examples, schema=schema, model=model, model_run=model_run, dataset="csv", module="my_model.py",
          module_source=module_source(head=SIGMOID), epochs=8, batch_size=32, learning_rate=0.01, seed=1)  # fmt: skip
    losses = [epoch["loss"] for epoch in model_run.history["per_epoch"]]
    assert losses[-1] < losses[0]
    evaluation, blessing = ModelEvaluation(tmp_path / "evaluation"), ModelBlessing(tmp_path / "blessing")
    result = evaluate(examples=examples, schema=schema, model=model, evaluation=evaluation, blessing=blessing,
                      thresholds={"accuracy": {"lower_bound": 0.85}})  # fmt: skip
    metrics = evaluation.metrics
    assert result["blessed"], result
    assert metrics["accuracy"] > 0.85 and metrics["roc_auc"] > 0.9, metrics
    serving = json.loads((evaluation.path / "serving_check.json").read_text())
    assert serving["passed"], serving  # The SavedModel's two probabilities are model.keras's.
    probabilities = keras.models.load_model(model.keras_file).predict(
        {name: np.array([[1.0]], dtype="float32") for name in json.loads((model.assets_uri / "model_inputs.json")
                                                                         .read_text())}, verbose=0)  # fmt: skip
    assert probabilities.shape == (1, 2) and probabilities.sum() == pytest.approx(1.0, abs=1e-6)


def test_a_sigmoid_heads_own_loss_gets_its_one_probability(cancer, tmp_path):
    examples, schema = cancer
    extra = "\ndef loss():\n    return keras.losses.BinaryCrossentropy()\n"
    task = user_task(examples, schema, module_source(head=SIGMOID, extra=extra), tmp_path)
    model = task.build_model()
    x, y = next(task.dataset(examples, "eval", batch_size=16, training=False, seed=0).as_numpy_iterator())
    probabilities = model.predict_on_batch(x)
    assert probabilities.shape == (len(y), 2)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1, atol=1e-6)
    positive = probabilities[:, 1:]
    expected = keras.losses.BinaryCrossentropy(reduction=None)(y.astype("float32")[:, None], positive)
    np.testing.assert_allclose(task.loss()(y, probabilities), expected, rtol=1e-5)
    # The task's own loss on the two columns is the same binary cross-entropy.
    plain = user_task(examples, schema, module_source(head=SIGMOID), tmp_path / "plain")
    np.testing.assert_allclose(plain.loss()(y, probabilities), expected, rtol=1e-4)


# keras.io's binary metrics on its sigmoid model: they read the one probability p, not the two columns kflow makes of
# it (before: "Dimensions must be equal, but are 32 and 2", and AUC's "segment_ids and data should have same leading
# dimension", mid-fit).
BINARY_METRICS = """

def metrics():
    return [keras.metrics.BinaryAccuracy(), keras.metrics.AUC(), keras.metrics.Precision()]
"""


@pytest.mark.slow  # ~9 s; make test trains, evaluates and serves a sigmoid head (above)
def test_keras_binary_metrics_of_a_sigmoid_model_read_its_one_probability(cancer, tmp_path):
    examples, schema = cancer
    model_run = ModelRun(tmp_path / "run")
    train(examples=examples, schema=schema, model=Model(tmp_path / "model"), model_run=model_run, dataset="csv",
          module="my_model.py", module_source=module_source(head=SIGMOID, extra=BINARY_METRICS), epochs=3,
          batch_size=32, learning_rate=0.01, seed=1)  # fmt: skip
    last = model_run.history["per_epoch"][-1]
    for name in ("binary_accuracy", "auc", "precision"):
        for key in (name, f"val_{name}"):
            assert 0.0 <= last[key] <= 1.0, (key, last)
    assert last["val_auc"] > 0.9 and last["val_binary_accuracy"] > 0.8, last


def test_a_modules_metrics_are_named_as_in_a_process_of_their_own(cancer, tmp_path):
    """Keras numbers a metric's default name by the process' count: after another AUC (an earlier test, a tuner's
    earlier trial in the same worker), the history said `auc_1`, not the `auc` a fresh process says (make test)."""
    import keras

    keras.metrics.AUC(), keras.metrics.AUC()  # noqa: B018 - made before, as an earlier test or trial made them
    examples, schema = cancer
    task = user_task(examples, schema, module_source(head=SIGMOID, extra=BINARY_METRICS), tmp_path)
    assert [metric.name for metric in task.metrics()] == ["binary_accuracy", "auc", "precision"]


# A layer made as the module is imported (a shared head, an encoder), beside those build_model makes: Keras named
# both `dense` once every build named its layers from an empty count (`The name "dense" is used 2 times`).
MODULE_LEVEL_LAYER = """\
import keras

HEAD = keras.layers.Dense(3, activation="softmax")


def build_model(schema, options):
    inputs = {f["name"]: keras.Input(shape=(1,), name=f["name"]) for f in options["features"]}
    hidden = keras.layers.Dense(8, activation="relu")(keras.layers.concatenate(list(inputs.values())))
    return keras.Model(inputs, HEAD(hidden))
"""


def test_a_layer_made_at_import_keeps_its_name_and_every_build_names_the_others_alike(iris, tmp_path):
    examples, schema = iris
    task = user_task(examples, schema, MODULE_LEVEL_LAYER, tmp_path)
    names = [[layer.name for layer in task.build_model().layers] for _ in range(2)]
    assert names[0] == names[1] and len(set(names[0])) == len(names[0]), names
    assert sum(name.startswith("dense") for name in names[0]) == 2, names


# --- a loss function of the module's own (keras.io's custom losses) ---------------------------------------------------

FOCAL = """

def focal(y_true, y_pred):
    y_true = keras.ops.cast(keras.ops.reshape(y_true, (-1,)), "int32")
    p = keras.ops.take_along_axis(y_pred, keras.ops.expand_dims(y_true, -1), axis=-1)[:, 0]
    return -keras.ops.mean((1 - keras.ops.clip(p, 1e-7, 1.0)) ** 2 * keras.ops.log(keras.ops.clip(p, 1e-7, 1.0)))
"""
COMPILED = "    model = keras.Model(inputs, outputs)\n    model.compile(optimizer='adam', loss=focal)\n    return model"


@pytest.mark.parametrize("where_given", ["loss", "compile"])
def test_a_loss_function_of_the_modules_own_is_the_loss_trained(iris, tmp_path, where_given):
    """Returned by loss() (before: `'function' object has no attribute 'get_config'`) or compiled in build_model
    (before: the task's loss was trained instead, said in the log)."""
    examples, schema = iris
    if where_given == "loss":
        source = module_source(extra=FOCAL + "\n\ndef loss():\n    return focal\n")
    else:
        source = module_source(extra=FOCAL).replace("    return keras.Model(inputs, outputs)", COMPILED)
        assert "loss=focal" in source
    task = user_task(examples, schema, source, tmp_path)
    model = task.build_model()
    x, y = next(task.dataset(examples, "eval", batch_size=16, training=False, seed=0).as_numpy_iterator())
    probabilities = model.predict_on_batch(x)
    np.testing.assert_allclose(task.loss()(y, probabilities), task.user_module.focal(y, probabilities), rtol=1e-6)
    model, model_run = Model(tmp_path / "model"), ModelRun(tmp_path / "run")
    train(examples=examples, schema=schema, model=model, model_run=model_run, dataset="csv", module="my_model.py",
          module_source=source, epochs=2, batch_size=32)  # fmt: skip
    assert model.keras_file.exists() and len(model_run.history["per_epoch"]) == 2


@pytest.mark.parametrize(
    ("returned", "said", "line"),
    [("keras.losses.LossFunctionWrapper(abs)", "loss() failed: AttributeError: module 'keras.losses' has no "
      "attribute 'LossFunctionWrapper'", "return keras.losses.LossFunctionWrapper(abs)"),
     ("[1, 2]", "loss() returned [1, 2], not a loss", "def loss():")],
    ids=["raises", "no_loss"],
)  # fmt: skip
def test_a_loss_that_fails_or_is_no_loss_is_one_line_naming_its_line(iris, tmp_path, returned, said, line):
    examples, schema = iris
    source = module_source(extra=f"\n\ndef loss():\n    return {returned}\n")
    task = user_task(examples, schema, source, tmp_path)
    with pytest.raises(UserModuleError) as refused:
        task.build_model()
    assert said in str(refused.value)
    assert refusal_line(str(refused.value), source).strip() == line
