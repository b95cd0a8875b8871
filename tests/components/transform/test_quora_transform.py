"""Quora through the Transform: the Beam pass's vocabulary of unigrams and bigrams is TextVectorization.adapt's,
token for token, and its class weights the task's; a Trainer given the graph adapts nothing."""

from __future__ import annotations

import json
from pathlib import Path

import keras
import pytest

from kflow.components.datasets.quora.ingest.executor import run as ingest
from kflow.components.datasets.quora.task import CLASS_WEIGHTS_FILE, VOCAB_FILE, QuoraTask
from kflow.components.trainer.executor import run as train
from kflow.components.transform.executor import run as transform
from kflow.components.util.schema import load_schema
from kflow.pipeline.dsl.artifacts import Examples, Model, ModelRun, Rejects, Schema, TransformGraph

SAMPLE = Path(__file__).resolve().parents[3].parent / "shared" / "datasets" / "quora-insincere" / "train_sample.csv"
OPTIONS = {"max_tokens": 3000}  # fewer than the sample's tokens: the cut, and its ties, are exercised


@pytest.fixture(scope="module")
def quora(tmp_path_factory):
    if not SAMPLE.exists():
        pytest.skip(f"{SAMPLE} is not here")
    root = tmp_path_factory.mktemp("quora")
    examples, schema = Examples(root / "examples"), Schema(root / "schema")
    ingest(examples=examples, schema=schema, rejects=Rejects(root / "rejects"), source_path=str(SAMPLE),
           shards_per_split=2)  # fmt: skip
    graph = TransformGraph(root / "graph")
    transform(examples=examples, schema=schema, transform_graph=graph, dataset="quora", options=OPTIONS)
    return examples, schema, graph, root


def test_the_beam_vocabulary_is_text_vectorizations_and_the_weights_the_tasks(quora):
    examples, schema, graph, root = quora
    adapted = QuoraTask(load_schema(schema.file), model_options=OPTIONS)
    adapted.prepare(examples, root / "adapted")  # TextVectorization.adapt over the training split
    taken = QuoraTask(load_schema(schema.file), model_options=OPTIONS)
    taken.use_transform_graph(graph)
    figures = taken.prepare(examples, root / "taken")
    assert figures["vocabulary_size"] == len(adapted.vocabulary) == OPTIONS["max_tokens"] - 2
    assert taken.vocabulary == adapted.vocabulary  # the same tokens in the same order, ties included
    assert taken.class_weights == pytest.approx(adapted.class_weights)
    assert (root / "taken" / VOCAB_FILE).read_text() == (root / "adapted" / VOCAB_FILE).read_text()
    assert json.loads((root / "taken" / CLASS_WEIGHTS_FILE).read_text()).keys() == {"0", "1"}
    preprocessing = keras.saving.load_model(graph.model_file, safe_mode=True)
    assert preprocessing.get_layer("tokens").get_vocabulary()[2:] == adapted.vocabulary


def test_a_trainer_with_the_graph_adapts_nothing(quora, tmp_path, monkeypatch):
    examples, schema, graph, _ = quora
    calls = []
    original = keras.layers.TextVectorization.adapt
    monkeypatch.setattr(keras.layers.TextVectorization, "adapt", lambda *a, **k: calls.append(1) or original(*a, **k))
    model = Model(tmp_path / "model")
    train(examples=examples, schema=schema, model=model, model_run=ModelRun(tmp_path / "run"), transform_graph=graph,
          dataset="quora", model_options={**OPTIONS, "embedding_dim": 8}, epochs=1, batch_size=64)  # fmt: skip
    assert calls == [] and (model.assets_uri / VOCAB_FILE).exists()
