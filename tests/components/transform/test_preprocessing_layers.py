"""A preprocessing_fn's own layer class (registered with Keras) loads in a process that never ran the Transform; a
layer its saved model could not load (a Lambda, a class Keras does not know by name) is refused before any Beam pass.

A user trial's preprocessing_fn took a date's year with a layer of its own (`tf.strings` of `inputs` are refused
outside a layer); the run trained and blessed the model, and `kflow predict`, a fresh process, failed in a page of
Keras' deserialization text ("Could not locate class 'YearOf'"): only the process that imported the module knew the
class. The module now travels beside the preprocessing model (the TransformGraph's, and the Model's assets) and is
imported before a model built on it loads.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

import kflow.components.transform.user_preprocessing as user_preprocessing
from kflow.components.datasets.tabular.task import TabularTask
from kflow.components.trainer.executor import run as train
from kflow.components.transform.executor import run as transform
from kflow.components.transform.preprocessing_trace import preprocessing_problem
from kflow.components.util.schema import load_schema
from kflow.pipeline.dsl.artifacts import Model, ModelRun, TransformGraph

PREPROCESSING = """
import keras
import tensorflow as tf


@keras.saving.register_keras_serializable(package="fruit")
class Tidy(keras.layers.Layer):
    def call(self, text):
        return tf.strings.strip(tf.strings.lower(text))

    def compute_output_shape(self, shape):
        return shape


def preprocessing_fn(inputs, analyzers):
    colour = Tidy()(inputs["colour"])
    weight = keras.ops.nan_to_num(inputs["weight"], nan=0.0)
    return {
        "colour": keras.layers.StringLookup(vocabulary=analyzers.vocabulary(colour), output_mode="one_hot")(colour),
        "weight": keras.layers.Normalization(mean=analyzers.mean(weight), variance=analyzers.variance(weight))(weight),
    }
"""

FRESH_PROCESS = """
import sys

import numpy as np

from kflow.components.datasets.tabular.preprocessing import load_preprocessing
from kflow.components.models import load_trained

model = load_trained(sys.argv[1], "tabular_mlp")
rows = {"colour": np.array([["Red "], ["purple"]]), "weight": np.array([[100.0], [np.nan]], "float32")}
scores = np.asarray(model(rows))
assert scores.shape == (2, 3) and np.allclose(scores.sum(axis=1), 1.0, atol=1e-4), scores
graph = load_preprocessing(sys.argv[2])
print("loaded", sorted(graph(rows)))
"""


@pytest.mark.slow  # ~13 s; make test trains a preprocessing_fn's model end to end (test_user_preprocessing.py), its
# SavedModel loaded in a fresh process by the Evaluator's serving check
def test_a_model_on_a_preprocessing_fns_own_layer_loads_in_a_fresh_process(fruit, tmp_path):
    examples, schema, _, _, _ = fruit
    module = tmp_path / "my_preprocessing.py"
    module.write_text(PREPROCESSING)
    graph = TransformGraph(tmp_path / "graph")
    transform(examples=examples, schema=schema, transform_graph=graph, dataset="csv", module=str(module),
              module_source=PREPROCESSING)  # fmt: skip
    model = Model(tmp_path / "model")
    train(examples=examples, schema=schema, model=model, model_run=ModelRun(tmp_path / "model_run"),
          transform_graph=graph, dataset="csv", model_name="tabular_mlp", model_options={"hidden_units": [8]},
          epochs=1, batch_size=16)  # fmt: skip
    assert (model.assets_uri / "preprocessing_fn.py").read_text() == PREPROCESSING
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path for path in sys.path if path)}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(FRESH_PROCESS), str(model.keras_file), str(graph.model_file)],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "loaded ['colour', 'weight']" in done.stdout, done.stdout


LAMBDA = """import keras


def preprocessing_fn(inputs, analyzers):
    weight = keras.ops.nan_to_num(inputs["weight"], nan=0.0)
    grams = keras.layers.Lambda(lambda x: x / 1000.0, output_shape=(1,))(weight)
    return {"weight": keras.layers.Normalization(mean=analyzers.mean(grams), variance=analyzers.variance(grams))(grams)}
"""
UNREGISTERED = """import keras


class Grams(keras.layers.Layer):
    def call(self, x):
        return keras.ops.nan_to_num(x, nan=0.0) / 1000.0


def preprocessing_fn(inputs, analyzers):
    colour = inputs["colour"]
    grams = Grams()(inputs["weight"])
    return {"weight": grams, "colour": keras.layers.StringLookup(vocabulary=analyzers.vocabulary(colour))(colour)}
"""
NO_CONFIG = """import keras
import numpy as np


@keras.saving.register_keras_serializable(package="fruit")
class Scaled(keras.layers.Layer):
    def __init__(self, by, **kwargs):
        super().__init__(**kwargs)
        self.by = by

    def call(self, x):
        return keras.ops.nan_to_num(x, nan=0.0) / self.by


def preprocessing_fn(inputs, analyzers):
    return {"weight": Scaled(np.float32(1000.0))(inputs["weight"])}
"""


@pytest.mark.parametrize(
    ("source", "line", "says"),
    [
        # Before: Keras' words from the Beam pass's workers ("We could not automatically infer the shape of the
        # Lambda's output"); with output_shape, after the whole pass ("Requested the deserialization of a `Lambda`
        # layer whose `function` is a Python lambda … passing `safe_mode=False`").
        (LAMBDA, 6, "TypeError: a keras.layers.Lambda is not saved with the preprocessing model (Keras' safe_mode "
         "loads no Python function, and the Trainer, kflow predict and serving load it safely): use keras.ops in "
         "preprocessing_fn directly, or a keras.layers.Layer subclass of your module decorated with "
         "@keras.saving.register_keras_serializable() (docs/transform.md, 'A layer of your own')"),
        # Before: "Functional could not be deserialized properly … Could not locate class 'Grams'", in the Beam pass.
        (UNREGISTERED, 11, "TypeError: the layer class Grams is not registered with Keras, which cannot find it by "
         "name when the saved preprocessing model loads: decorate it with @keras.saving.register_keras_serializable()"),
        # A numpy number is no argument Keras records for the layer's config (a plain float is).
        (NO_CONFIG, 16, "TypeError: the layer class Scaled does not load back from its saved config "
         "(NotImplementedError: Object Scaled was created by passing non-serializable argument values in "
         "`__init__()`, and therefore the object must override `get_config()` in order to be serializable.): give "
         "it a get_config returning its __init__ arguments"),
    ],
    ids=["lambda", "unregistered", "no_get_config"],
)  # fmt: skip
def test_a_layer_its_saved_model_could_not_load_is_refused_before_the_beam_pass(fruit, tmp_path, monkeypatch, source,
                                                                                line, says):  # fmt: skip
    examples, schema, _, _, _ = fruit
    passes = []
    monkeypatch.setattr(user_preprocessing, "run_analyzers", lambda *args, **kwargs: passes.append(1))
    with pytest.raises(ValueError) as raised:
        transform(examples=examples, schema=schema, transform_graph=TransformGraph(tmp_path / "graph"), dataset="csv",
                  module="/somewhere/my_preprocessing.py", module_source=source)  # fmt: skip
    message = str(raised.value)
    assert "\n" not in message and message.startswith(f"transform.module: my_preprocessing.py:{line}: {says}"), message
    assert passes == []
    # kflow validate's trace, without data, says it in the same line.
    (tmp_path / "my_preprocessing.py").write_text(source)
    types = TabularTask(load_schema(schema.file)).types
    assert preprocessing_problem(str(tmp_path / "my_preprocessing.py"), types, {"label": "the label"}) == message


def test_the_docs_layer_of_your_own_example_reads_a_dates_year(tmp_path):
    """docs/transform.md, 'A layer of your own': a registered Year layer on a table's sale dates, a missing date the
    training rows' mean year; validate's trace accepts it, and the graph loads as the Trainer loads it."""
    from kflow.components.datasets.csv.ingest.executor import run as ingest
    from kflow.components.datasets.tabular.preprocessing import load_preprocessing
    from kflow.pipeline.dsl.artifacts import Examples, Rejects, Schema

    page = (Path(__file__).resolve().parents[3] / "docs" / "transform.md").read_text()
    section = page.split("## A layer of your own")[1].split("\n## ")[0]
    (source,) = [block.split("```")[0] for block in section.split("```python\n")[1:]]
    rng = np.random.default_rng(2)
    years = rng.integers(2000, 2024, 160)
    dates = ["" if i % 11 == 0 else f"{year}-0{1 + i % 9}-1{i % 10}" for i, year in enumerate(years)]  # some missing
    rows = [
        f"{date},{rng.normal():.3f},{'new' if year >= 2012 else 'old'}" for date, year in zip(dates, years, strict=True)
    ]
    (tmp_path / "sales.csv").write_text("\n".join(["sold,noise,label", *rows]) + "\n")
    examples, schema = Examples(tmp_path / "examples"), Schema(tmp_path / "schema")
    ingest(examples=examples, schema=schema, rejects=Rejects(tmp_path / "rejects"),
           source_path=str(tmp_path / "sales.csv"), label="label")  # fmt: skip
    types = TabularTask(load_schema(schema.file)).types
    assert types["sold"] == "string", types
    (tmp_path / "my_preprocessing.py").write_text(source)
    assert preprocessing_problem(str(tmp_path / "my_preprocessing.py"), types, {"label": "the label"}) is None
    graph = TransformGraph(tmp_path / "graph")
    transform(examples=examples, schema=schema, transform_graph=graph, dataset="csv", module="my_preprocessing.py",
              module_source=source)  # fmt: skip
    assert graph.analyzers["inputs"] == {"sold": "string"}
    mean = graph.analyzers["analyzers"]["mean.0"]["value"]["mean"]
    assert 2000 <= mean <= 2023, mean
    preprocessing = load_preprocessing(graph.model_file)  # safe_mode, the module's layer registered from the graph
    out = preprocessing({"sold": tf.constant([["2020-05-17"], [""], ["2000-01-01"]])})
    variance = graph.analyzers["analyzers"]["variance.1"]["value"]["variance"]
    expected = (np.array([2020.0, mean, 2000.0]) - mean) / np.sqrt(variance)
    assert np.allclose(np.asarray(out["year"]).ravel(), expected, atol=1e-3), out
