"""WikiText-2 through the Transform: Beam's word counts give the WordPiece vocabulary the task learnt in memory
(`compute_word_piece_vocabulary`'s), token for token, and the same baseline token; the graph's preprocessing model
loads with safe_mode and packs lines as the task's dataset does; a Trainer given the graph learns nothing."""

from __future__ import annotations

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from kflow.components.datasets.wikitext2 import wordpiece
from kflow.components.datasets.wikitext2.ingest.executor import run as ingest
from kflow.components.datasets.wikitext2.task import BASELINE_FILE, GRAPH_OPTIONS, VOCAB_FILE, WikiText2Task
from kflow.components.trainer.executor import run as train
from kflow.components.transform.executor import run as transform
from kflow.components.util.schema import load_schema
from kflow.pipeline.app.transform_section import TEXT_OPTIONS
from kflow.pipeline.dsl.artifacts import Examples, Model, ModelRun, Rejects, Schema, TransformGraph
from tests.conftest import shared_dataset

# A smaller vocabulary than the shipped 8,000 learns in fewer probes; the learner's every step still runs.
OPTIONS = {"vocabulary_size": 2000, "sequence_length": 64}
WORKERS_2 = ["--direct_num_workers=2", "--direct_running_mode=multi_processing"]


@pytest.fixture(scope="module")
def wikitext(tmp_path_factory):
    source = shared_dataset("wikitext-2")
    root = tmp_path_factory.mktemp("wikitext2")
    examples, schema = Examples(root / "examples"), Schema(root / "schema")
    ingest(examples=examples, schema=schema, rejects=Rejects(root / "rejects"), source_path=str(source),
           shards_per_split=2)  # fmt: skip
    graph = TransformGraph(root / "graph")
    transform(examples=examples, schema=schema, transform_graph=graph, dataset="wikitext2", options=OPTIONS,
              beam_args=WORKERS_2)  # fmt: skip
    return examples, schema, graph, root


@pytest.mark.slow  # ~60 s: the whole of WikiText-2's training split, twice
def test_the_beam_word_counts_give_the_tasks_vocabulary_and_baseline(wikitext, monkeypatch):
    examples, schema, graph, root = wikitext
    learnt = WikiText2Task(load_schema(schema.file), model_options=OPTIONS)
    learnt.prepare(examples, root / "learnt")  # the vocabulary learnt in memory, as a Trainer without a graph does
    taken = WikiText2Task(load_schema(schema.file), model_options=OPTIONS)
    taken.use_transform_graph(graph)
    calls = learning_calls(monkeypatch)
    figures = taken.prepare(examples, root / "taken")
    assert calls == []
    assert len(taken.vocabulary) == figures["vocabulary_size"] > 1000
    assert taken.vocabulary == learnt.vocabulary  # token for token, in order
    assert taken.baseline == learnt.baseline
    assert (root / "taken" / VOCAB_FILE).read_text() == (root / "learnt" / VOCAB_FILE).read_text()
    assert json.loads((root / "taken" / BASELINE_FILE).read_text()) == learnt.baseline
    # The graph's files: the words with their counts, the vocabulary, and the options it was learnt with.
    analyzers = graph.analyzers
    words = (graph.path / analyzers["analyzers"]["text.words"]["file"]).read_text().splitlines()
    assert len(words) == analyzers["analyzers"]["text.words"]["value"]["distinct"] > 10_000
    assert analyzers["options"] == {name: taken.options[name] for name in GRAPH_OPTIONS}
    # The preprocessing model packs lines as the task's dataset does.
    preprocessing = keras.saving.load_model(graph.model_file, safe_mode=True, compile=False)
    lines = tf.constant(["The game 's opening theme was composed by Sakimoto .", "Valkyria Chronicles III"])
    packed = preprocessing({"text": lines})["token_ids"].numpy()
    assert packed.shape == (2, OPTIONS["sequence_length"])
    np.testing.assert_array_equal(packed, learnt._pack(lines).numpy())


def learning_calls(monkeypatch) -> list[str]:
    """Counts the WordPiece learner's calls in this process (what a Trainer without a graph calls)."""
    calls: list[str] = []
    original = wordpiece.learn
    monkeypatch.setattr(wordpiece, "learn", lambda *a, **k: calls.append("learn") or original(*a, **k))
    return calls


def test_the_transform_section_passes_the_options_the_task_checks():
    assert TEXT_OPTIONS["wikitext2"] == GRAPH_OPTIONS


@pytest.mark.slow  # ~40 s
def test_a_trainer_with_the_graph_learns_no_vocabulary(wikitext, tmp_path, monkeypatch):
    examples, schema, graph, _ = wikitext
    calls = learning_calls(monkeypatch)
    model = Model(tmp_path / "model")
    small = {**OPTIONS, "num_layers": 1, "hidden_dim": 16, "num_heads": 2, "intermediate_dim": 32}
    train(examples=examples, schema=schema, model=model, model_run=ModelRun(tmp_path / "run"),
          transform_graph=graph, dataset="wikitext2", epochs=1, batch_size=64, steps_per_epoch=2,
          model_options=small)  # fmt: skip
    assert calls == []
    assert (model.assets_uri / VOCAB_FILE).read_text().splitlines() == (
        graph.path / graph.analyzers["wordpiece_vocabulary"]
    ).read_text().splitlines()
