"""The Transform: a Beam pass learns what the tabular task learnt in memory, written as readable files and a Keras
preprocessing model that loads with safe_mode; a Trainer given the graph learns nothing from the data (its
analyzer and adapt calls counted: zero), and its model, saved and served, applies the same preprocessing."""

from __future__ import annotations

import math

import keras
import numpy as np
import pytest
import tensorflow as tf

from kflow.components.datasets.tabular.task import TabularTask
from kflow.components.evaluator.executor import run as evaluate
from kflow.components.trainer.executor import run as train
from kflow.components.util.schema import load_schema
from kflow.pipeline.dsl.artifacts import (
    Model,
    ModelBlessing,
    ModelEvaluation,
    ModelRun,
)
from tests.components.transform.conftest import OPTIONS

ADAPTING = (
    keras.layers.Normalization,
    keras.layers.StringLookup,
    keras.layers.IntegerLookup,
    keras.layers.TextVectorization,
    keras.layers.Discretization,
)


@pytest.fixture
def learning_calls(monkeypatch):
    """Counts every pass a training process makes to learn preprocessing: the tabular task's own read of the
    training split and any Keras preprocessing layer's `adapt`."""
    calls = []

    def counted(owner, name):
        original = getattr(owner, name)

        def wrapper(*args, **kwargs):
            calls.append(f"{owner.__name__}.{name}")
            return original(*args, **kwargs)

        monkeypatch.setattr(owner, name, wrapper)

    counted(TabularTask, "_read")
    for layer in ADAPTING:
        counted(layer, "adapt")
    return calls


def test_the_beam_pass_learns_what_the_task_learnt_in_memory(fruit):
    examples, schema, graph, summary, root = fruit
    task = TabularTask(load_schema(schema.file), model_options=OPTIONS)
    task.prepare(examples, root / "in-memory")
    learnt, expected = graph.analyzers, task.preprocessing
    assert [spec["name"] for spec in learnt["features"]] == [spec["name"] for spec in expected["features"]]
    for got, want in zip(learnt["features"], expected["features"], strict=True):
        assert got["kind"] == want["kind"]
        assert got.get("vocabulary") == want.get("vocabulary")
        for key in ("mean", "variance"):
            assert math.isclose(got.get(key, 0), want.get(key, 0), rel_tol=1e-9), (got, want)
    assert learnt["head"] == expected["head"]
    assert learnt["left_out"] == expected["left_out"] and summary["analyzers"] == 8
    # Readable: each vocabulary a file of value<TAB>count, most frequent first; the statistics in analyzers.json.
    colours = [line.split("\t") for line in (graph.vocabulary_dir / "vocabulary.colour.txt").read_text().splitlines()]
    counts = [int(count) for _, count in colours]
    assert (
        counts == sorted(counts, reverse=True)
        and sum(counts) == learnt["analyzers"]["vocabulary.colour"]["value"]["seen"]
    )
    weight = learnt["analyzers"]["moments.weight"]["value"]
    assert weight["min"] < weight["mean"] < weight["max"] and weight["count"] < summary["analyzers"] * 120
    # The preprocessing model: raw values in (a missing number, an unknown colour), model inputs out.
    preprocessing = keras.saving.load_model(graph.model_file, safe_mode=True)
    out = preprocessing(
        {
            name: tf.constant([[v]])
            for name, v in {"colour": "blue", "weight": float("nan"), "organic": 1.0, "notes": "crisp pear"}.items()
        }
    )
    numbers = [spec["name"] for spec in learnt["features"] if spec["kind"] == "numeric"]  # one block, in order
    assert out["numbers"].shape[-1] == len(numbers) and "weight" not in out
    assert abs(float(out["numbers"][0, numbers.index("weight")])) < 1e-6  # missing: the training mean, normalised to 0
    vocabularies = {spec["name"]: spec.get("vocabulary") for spec in learnt["features"]}
    assert out["colour"].shape[-1] == len(vocabularies["colour"]) + 1  # an out-of-vocabulary slot
    assert out["notes"].shape[-1] == len(vocabularies["notes"]) + 1


def test_a_trainer_with_the_graph_learns_nothing_and_serves_raw_features(fruit, learning_calls, tmp_path):
    examples, schema, graph, _, root = fruit
    control = TabularTask(load_schema(schema.file), model_options=OPTIONS)
    control.prepare(examples, tmp_path / "control")  # the task's own pass: the counter sees it
    assert learning_calls and set(learning_calls) == {"TabularTask._read"}
    learning_calls.clear()
    model, model_run = Model(tmp_path / "model"), ModelRun(tmp_path / "model_run")
    train(
        examples=examples,
        schema=schema,
        model=model,
        model_run=model_run,
        transform_graph=graph,
        dataset="csv",
        model_name="tabular_mlp",
        model_options={**OPTIONS, "hidden_units": [8]},
        epochs=3,
        batch_size=16,
    )
    assert learning_calls == []
    trained = keras.saving.load_model(model.keras_file, safe_mode=True)
    assert "preprocessing" in [layer.name for layer in trained.layers]  # the graph, embedded
    assert (model.assets_uri / "preprocessing.keras").read_bytes() == graph.model_file.read_bytes()
    rows = {
        "colour": [["red"], ["never seen"]],
        "weight": [[101.0], [float("nan")]],
        "organic": [[1.0], [0.0]],
        "notes": [["crisp sweet"], [""]],
    }
    raw = {
        name: tf.constant(values, tf.string if name in ("colour", "notes") else tf.float32)
        for name, values in rows.items()
    }
    served = tf.saved_model.load(str(model.serving_uri)).signatures["serving_default"]
    scores = served(**{name: value for name, value in raw.items()})["scores"].numpy()
    np.testing.assert_allclose(scores, trained(raw).numpy(), atol=1e-5)
    # The tf.Example signature (TFX's): serialized Examples in, here without their label, the same scores out.
    records = []
    for split in examples.splits:
        for record in tf.data.TFRecordDataset(examples.split_files(split), compression_type="GZIP"):
            example = tf.train.Example.FromString(record.numpy())
            del example.features.feature["label"]
            records.append(example.SerializeToString())
    serialized = tf.constant(records)
    by_examples = tf.saved_model.load(str(model.serving_uri)).signatures["serve_examples"](examples=serialized)
    task = TabularTask(load_schema(schema.file), model_options=OPTIONS)
    task.load_assets(model.assets_uri)
    np.testing.assert_allclose(by_examples["scores"].numpy(), trained(task.inputs(serialized)).numpy(), atol=1e-5)
    assert by_examples["classes"].shape == by_examples["scores"].shape and len(records) > 10
    result = evaluate(
        examples=examples,
        schema=schema,
        model=model,
        evaluation=ModelEvaluation(tmp_path / "evaluation"),
        blessing=ModelBlessing(tmp_path / "blessing"),
        thresholds={},
    )
    assert learning_calls == [] and "accuracy" in ModelEvaluation(tmp_path / "evaluation").metrics, result


def test_a_graph_learnt_with_other_data_options_is_refused(fruit, tmp_path):
    examples, schema, graph, _, _ = fruit
    task = TabularTask(load_schema(schema.file), model_options={"max_categories": 7})
    task.use_transform_graph(graph)
    with pytest.raises(ValueError, match=r"other data options: \{'max_categories': 5\}"):
        task.prepare(examples, tmp_path)


def test_a_class_with_no_training_record_is_said(caplog):
    """A class only in the eval or test split (a user trial's TFRecord split_files, an image class under test/
    alone): the model cannot learn it, and its metrics count it as misses; the Transform says which."""
    import logging
    from types import SimpleNamespace

    from kflow.components.transform.tabular_analysis import label_head

    task = SimpleNamespace(kind="classification", label="cultivar", options={"class_weighting": "none"})
    results = {"label.counts": {"ranked": [["a", 40], ["b", 35]]}, "label.classes": ["a", "b", "c"]}
    with caplog.at_level(logging.WARNING, logger="kflow.transform"):
        head = label_head(task, results)
    assert head["classes"] == ["a", "b", "c"]
    (said,) = [record.getMessage() for record in caplog.records]
    assert said.startswith("transform: 1 class(es) of 'cultivar' have no training record, only eval or test ones: 'c'")
    caplog.clear()
    label_head(task, {**results, "label.classes": ["a", "b"]})
    assert not caplog.records


def test_each_dataset_takes_its_own_pass():
    """The pass is chosen by the task's classes' names, so that a table's Transform never imports another dataset's
    task (test_lean_imports.py checks that it does not), while images, a plugin's subclass among them, take the image
    pass."""
    from kflow.components.datasets import get_dataset
    from kflow.components.transform.executor import OWN_PASSES, _derives_from

    def own_pass(task_class: type) -> str | None:
        return next((write.__name__ for base, _, write in OWN_PASSES if _derives_from(task_class, base)), None)

    names = ("csv", "quora", "wikitext2", "mnist", "images")
    passes = {name: own_pass(get_dataset(name).task_class()) for name in names}
    assert passes == {"csv": None, "quora": "_write_text", "wikitext2": "_write_wordpiece", "mnist": "_write_images",
                      "images": "_write_images"}  # fmt: skip
    assert own_pass(type("PluginImages", (get_dataset("images").task_class(),), {})) == "_write_images"
