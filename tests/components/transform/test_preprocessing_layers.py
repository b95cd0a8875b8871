"""A preprocessing_fn's own layer class (registered with Keras) loads in a process that never ran the Transform.

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

from kflow.components.trainer.executor import run as train
from kflow.components.transform.executor import run as transform
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
