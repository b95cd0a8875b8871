"""Text scored by the masked LM (wikitext2/fill_mask.py): the masks a line holds found as the model's positions, each
filled with the model's own likeliest tokens (a real BertMaskedLM of the task, untrained), written as CSV rows and
Examples; lines with more masks than the model fills, or masks past its length, say how many stayed unfilled."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from kflow.components.datasets.wikitext2.fill_mask import MASK, TOP_K, FilledMaskTable, fill_entries
from kflow.components.datasets.wikitext2.task import WikiText2Task
from kflow.components.util.example_proto import serialize_example
from tests.components.datasets.text_fixtures import text_schema

WORDS = ["the", "river", "album", "station", "was", "built", "in", "a", "song", "##s", ",", "."]
OPTIONS = {"sequence_length": 16, "mask_selection_length": 3, "num_layers": 1, "hidden_dim": 16, "num_heads": 2,
           "intermediate_dim": 32, "dropout": 0.0}  # fmt: skip


@pytest.fixture(scope="module")
def task_and_model():
    task = WikiText2Task(text_schema({"text": "BYTES"}), model_options=OPTIONS)
    task.set_vocabulary(["[PAD]", "[CLS]", "[SEP]", "[UNK]", "[MASK]", *WORDS])
    keras.utils.set_random_seed(3)
    return task, task.build_model()


def _serialized(lines: list[str]) -> tf.Tensor:
    return tf.constant([serialize_example({"text": line, "key": f"k{n}"}) for n, line in enumerate(lines)])


def test_each_mask_is_filled_with_the_models_likeliest_tokens(task_and_model):
    task, model = task_and_model
    lines = ["The river was [MASK] in a station .", "the [mask] album , the song[MASK]", "no mask here"]
    inputs = task.inputs(_serialized(lines))
    ids = inputs["token_ids"].numpy()
    assert ids.shape == (3, 16)
    mask_id = task.vocabulary.index(MASK)
    # The masks' places, in order; [MASK] in any case, glued to a word or not.
    assert inputs["mask_positions"].numpy()[0].tolist() == [4, 0, 0]
    assert inputs["mask_positions"].numpy()[1].tolist() == [2, 7, 0]
    assert (ids[0] == mask_id).sum() == 1 and (ids[1] == mask_id).sum() == 2 and (ids[2] == mask_id).sum() == 0

    entries = fill_entries(task, ["a", "b", "c"], _serialized(lines), model.predict_on_batch)
    logits = np.asarray(model.predict_on_batch(inputs))
    probabilities = np.exp(logits) / np.exp(logits).sum(axis=-1, keepdims=True)
    special = [task.vocabulary.index(token) for token in task.special_tokens]
    for row, entry in enumerate(entries):
        assert entry["key"] == "abc"[row] and entry["text"] == lines[row] and entry["unfilled"] == 0
        assert len(entry["masks"]) == lines[row].lower().count("[mask]")
        for slot, mask in enumerate(entry["masks"]):
            expected = probabilities[row, slot].copy()
            expected[special] = -1
            best = np.argsort(-expected, kind="stable")[:TOP_K]
            assert [choice["token"] for choice in mask["top"]] == [task.vocabulary[i] for i in best]
            np.testing.assert_allclose([c["score"] for c in mask["top"]], expected[best], rtol=1e-5)
            assert mask["token"] == mask["top"][0]["token"] and mask["token"] not in task.special_tokens
    first, second, third = entries

    def written(before: str, token: str) -> str:  # a continuation joins the word before it
        return before.rstrip(" ") + token[2:] if token.startswith("##") else before + token

    assert first["filled"] == written("The river was ", first["masks"][0]["token"]) + " in a station ."
    tokens = [mask["token"] for mask in second["masks"]]
    assert second["filled"] == written(written("the ", tokens[0]) + " album , the song", tokens[1])
    assert third["filled"] == "no mask here" and third["masks"] == []


def test_masks_past_what_the_model_fills_are_counted_unfilled(task_and_model):
    task, model = task_and_model
    many = "the [MASK] [MASK] was [MASK] in [MASK] ."  # 4 masks; the model fills 3 a line
    long = " ".join(["river"] * 20) + " [MASK]"  # the mask past sequence_length (16, with [CLS] and [SEP])
    many_entry, long_entry = fill_entries(task, ["m", "l"], _serialized([many, long]), model.predict_on_batch)
    assert (len(many_entry["masks"]), many_entry["unfilled"]) == (3, 1)
    assert many_entry["filled"].endswith(f"in {MASK} .")  # the last left as it was
    assert (long_entry["masks"], long_entry["unfilled"], long_entry["filled"]) == ([], 1, long)


def test_an_entry_is_written_as_a_csv_row_and_an_example(task_and_model):
    task, model = task_and_model
    (entry,) = fill_entries(task, ["x.txt:3"], _serialized(["a [MASK] , a [MASK] ."]), model.predict_on_batch)
    table = FilledMaskTable()
    row = dict(zip(table.header(), table.row(entry), strict=True))
    assert row["key"] == "x.txt:3" and row["filled"] == entry["filled"] and row["unfilled"] == 0
    assert row["predicted_tokens"].split(" ") == [mask["token"] for mask in entry["masks"]]
    assert [float(s) for s in row["scores"].split(" ")] == pytest.approx([m["score"] for m in entry["masks"]], 1e-5)
    example = table.example(entry).features.feature
    assert [v.decode() for v in example["top_tokens"].bytes_list.value] == [
        choice["token"] for mask in entry["masks"] for choice in mask["top"]
    ]
    assert len(example["top_scores"].float_list.value) == 2 * TOP_K
    assert example["filled"].bytes_list.value[0].decode() == entry["filled"]
