"""WikiText2Task on tiny fixture Examples: vocabulary, batches, seeded masks, training, save/load."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from kflow.components.datasets.wikitext2.task import BASELINE_FILE, VOCAB_FILE, WikiText2Task, _read_text
from tests.components.datasets.text_fixtures import text_schema, write_wikitext

SCHEMA = text_schema({"text": "BYTES"})
# A small BERT and short lines keep the tests fast; the masking options are the task's defaults.
OPTIONS = {
    "vocabulary_size": 200,
    "sequence_length": 48,
    "mask_selection_length": 12,
    "num_layers": 1,
    "hidden_dim": 32,
    "num_heads": 2,
    "intermediate_dim": 64,
    "dropout": 0.0,
}


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    root = tmp_path_factory.mktemp("wikitext2")
    examples = write_wikitext(root / "examples")
    task = WikiText2Task(SCHEMA, model_options=OPTIONS)
    figures = task.prepare(examples, root / "assets")
    return task, examples, root / "assets", figures


def test_prepare_saves_a_vocabulary_that_load_assets_reads(prepared):
    task, _, assets, figures = prepared
    vocabulary = (assets / VOCAB_FILE).read_text().splitlines()
    assert vocabulary[:5] == ["[PAD]", "[CLS]", "[SEP]", "[UNK]", "[MASK]"]
    assert figures["vocabulary_size"] == len(vocabulary) <= 200
    # Every fixture word is short and frequent, so each is a whole token of the vocabulary.
    assert {"the", "river", "album", "station"} <= set(vocabulary)
    assert figures["most_frequent_token"] == "the"
    assert 0.15 < figures["most_frequent_token_share"] < 0.35

    fresh = WikiText2Task(SCHEMA, model_options=OPTIONS)
    fresh.load_assets(assets)
    assert fresh.vocabulary == vocabulary
    assert fresh.baseline == task.baseline
    assert (assets / BASELINE_FILE).exists()
    ids = np.asarray(fresh.tokenizer("the river")).tolist()
    assert [vocabulary[i] for i in ids] == ["the", "river"]


def test_batches_have_the_masked_lm_structure(prepared):
    task, examples, _, _ = prepared
    x, y, weights = next(iter(task.dataset(examples, "train", batch_size=16, training=True, seed=1, shuffle_buffer=64)))
    assert set(x) == {"token_ids", "padding_mask", "segment_ids", "mask_positions"}
    token_ids, padding = x["token_ids"].numpy(), x["padding_mask"].numpy()
    # Cut to its longest line (the fixture's lines are shorter than sequence_length 48) and its most masks (<= 12).
    assert token_ids.dtype == np.int32 and padding.dtype == bool and x["segment_ids"].shape == token_ids.shape
    assert token_ids.shape[0] == 16 and token_ids.shape[1] == padding.sum(axis=1).max() < 48
    slots = x["mask_positions"].shape[1]
    assert y.shape == weights.shape == (16, slots) and weights.dtype == tf.float32
    token_ids, positions, y, weights = (t.numpy() for t in (x["token_ids"], x["mask_positions"], y, weights))
    assert (token_ids[:, 0] == task.tokenizer.cls_token_id).all()
    used = weights == 1
    assert set(np.unique(weights)) <= {0.0, 1.0} and used.sum(axis=1).max() == slots <= 12
    # About a quarter of the ~25-35 tokens of a line is selected, capped at 12.
    selected = used.sum(axis=1)
    assert selected.min() >= 1 and selected.mean() > 4
    masked = token_ids[np.arange(16)[:, None], positions]
    assert 0.6 < (masked[used] == task.tokenizer.mask_token_id).mean() <= 1.0
    # Labels are real (non-special) tokens at used slots and 0 elsewhere.
    assert (y[used] >= 5).all() and (y[~used] == 0).all()


def test_lines_are_batched_with_lines_of_their_length_and_each_is_read_once_an_epoch(prepared):
    task, examples, _, _ = prepared
    packed = np.concatenate([task._pack(lines).numpy() for lines in _read_text(examples, "train").batch(64)])
    lengths = sorted((packed != 0).sum(axis=1).tolist())

    def read_lengths(batches):
        return [x["padding_mask"].numpy().sum(axis=1) for x, _, _ in batches]

    # Every line once (evaluation keeps the remainder), each at its own length.
    assert (
        sorted(
            np.concatenate(read_lengths(task.dataset(examples, "train", batch_size=4, training=False, seed=3))).tolist()
        )
        == lengths
    )
    epoch = read_lengths(task.dataset(examples, "train", batch_size=4, training=True, seed=3, shuffle_buffer=64))
    assert sum(len(batch) for batch in epoch) == len(lengths) // 4 * 4  # whole batches: only the remainder dropped
    # The remainder dropped is that of the unsorted lines, not the longest: unshuffled, the file's last lines.
    kept = sorted(np.concatenate(read_lengths(task.dataset(examples, "train", batch_size=4, training=True, seed=3))))
    in_file_order = (packed != 0).sum(axis=1)
    assert kept == sorted(in_file_order[: len(lengths) // 4 * 4].tolist())
    # Sorted windows: a batch's lines differ in length by a token or two; random batches of the fixture's by ~10.
    assert np.mean([np.ptp(batch) for batch in epoch]) <= 2 < np.ptp(lengths)
    assert len({int(batch.max()) for batch in epoch}) > 3  # and the batches have widths of their own


def test_evaluation_masks_are_reproducible_and_training_masks_are_not(prepared):
    task, examples, _, _ = prepared

    def passes(dataset):
        return [np.concatenate([b[0]["token_ids"].numpy().ravel() for b in dataset]) for _ in range(2)]

    first, second = passes(task.dataset(examples, "eval", batch_size=16, training=False, seed=7))
    third, _ = passes(task.dataset(examples, "eval", batch_size=16, training=False, seed=7))
    other, _ = passes(task.dataset(examples, "eval", batch_size=16, training=False, seed=8))
    assert np.array_equal(first, second) and np.array_equal(first, third)
    assert not np.array_equal(first, other)
    epoch1, epoch2 = passes(task.dataset(examples, "train", batch_size=16, training=True, seed=7))
    assert not np.array_equal(epoch1, epoch2)


def test_baseline_accuracy_is_the_share_of_the_most_frequent_token(prepared):
    task, examples, _, _ = prepared
    accuracy = task.baseline_accuracy(examples, "test", batch_size=16, seed=0)
    assert accuracy == task.baseline_accuracy(examples, "test", batch_size=16, seed=0)
    # "the" is about a fifth of the fixture's words.
    assert 0.12 < accuracy < 0.3


def test_a_few_training_steps_reduce_the_loss_and_the_model_round_trips(prepared, tmp_path):
    task, examples, _, _ = prepared
    keras.utils.set_random_seed(0)
    model = task.build_model()
    loss_fn = task.loss()
    optimizer = keras.optimizers.Adam(learning_rate=3e-3)
    batch_size = 32

    train_spec = task.dataset(examples, "train", batch_size=batch_size, training=True, seed=0).element_spec

    # Batches of lines of one length each: traced once for any length (a trace per length took ~25 s more).
    @tf.function(input_signature=list(train_spec))
    def step(x, y, weights):
        with tf.GradientTape() as tape:
            per_example = loss_fn(y, model(x, training=True), weights)
            loss = tf.nn.compute_average_loss(per_example, global_batch_size=batch_size)
        optimizer.apply_gradients(
            zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables, strict=True)
        )
        return loss

    def eval_loss():
        batches = task.dataset(examples, "eval", batch_size=batch_size, training=False, seed=0)
        losses = [float(tf.reduce_sum(loss_fn(y, model(x), w)) / tf.reduce_sum(w)) for x, y, w in batches]
        return float(np.mean(losses))

    before = eval_loss()
    for _ in range(4):
        for x, y, weights in task.dataset(examples, "train", batch_size=batch_size, training=True, seed=0):
            step(x, y, weights)
    after = eval_loss()
    assert after < before - 0.5, (before, after)

    # The metric is the accuracy over the masked slots only (sample_weight 0 elsewhere).
    metric = task.metrics()[0]
    hits = slots = 0.0
    for x, y, w in task.dataset(examples, "eval", batch_size=batch_size, training=False, seed=0):
        logits = model(x)
        metric.update_state(y, logits, w)
        hits += float(tf.reduce_sum(tf.cast(tf.argmax(logits, -1, output_type=tf.int32) == y, tf.float32) * w))
        slots += float(tf.reduce_sum(w))
    assert float(metric.result()) == pytest.approx(hits / slots, abs=1e-6)

    path = tmp_path / "model.keras"
    model.save(path)
    restored = keras.models.load_model(path)
    x, _, _ = next(iter(task.dataset(examples, "test", batch_size=8, training=False, seed=0)))
    np.testing.assert_array_equal(model.predict(x, verbose=0), restored.predict(x, verbose=0))


def test_bad_options_and_schemas_are_refused():
    with pytest.raises(ValueError, match="unknown trainer.model_options for wikitext2: colour"):
        WikiText2Task(SCHEMA, model_options={"colour": "red"})
    with pytest.raises(ValueError, match="mask_selection_length"):
        WikiText2Task(SCHEMA, model_options={"sequence_length": 16, "mask_selection_length": 32})
    with pytest.raises(ValueError, match="needs a 'text' feature"):
        WikiText2Task(text_schema({"body": "BYTES"}))
    with pytest.raises(ValueError, match="no vocabulary yet"):
        WikiText2Task(SCHEMA).build_model()


def test_the_model_shape_comes_from_model_options(prepared):
    _, _, assets, _ = prepared
    task = WikiText2Task(SCHEMA, model_options={**OPTIONS, "num_layers": 2, "hidden_dim": 24, "num_heads": 3})
    task.load_assets(assets)
    backbone = task.build_model().backbone
    assert (backbone.num_layers, backbone.hidden_dim, backbone.num_heads) == (2, 24, 3)
    assert backbone.vocabulary_size == len(task.vocabulary)
    odd = WikiText2Task(SCHEMA, model_options={**OPTIONS, "hidden_dim": 24, "num_heads": 5})
    odd.load_assets(assets)
    with pytest.raises(ValueError, match=r"hidden_dim \(24\) must be a multiple of num_heads \(5\)"):
        odd.build_model()


def test_masked_accuracy_counts_every_masked_token_alike_whatever_a_batchs_slots():
    """Batches cut to their most masks have slot counts of their own; Keras' SparseCategoricalAccuracy averages a
    line's slots first, which would weigh a batch of 2 slots' tokens twice those of one of 4."""
    from kflow.components.datasets.wikitext2.masked_accuracy import MaskedAccuracy

    logits = np.eye(3, dtype=np.float32)  # predicts class i at slot value i
    batches = [  # (predicted classes, true classes, weights)
        ([[0, 1]], [[0, 2]], [[1.0, 1.0]]),  # 1 hit of 2
        ([[0, 1, 2, 0]], [[0, 1, 2, 1]], [[1.0, 1.0, 1.0, 0.0]]),  # 3 hits of 3 (the 4th slot unused)
    ]
    ours, keras_own = MaskedAccuracy(), keras.metrics.SparseCategoricalAccuracy()
    for predicted, true, weights in batches:
        for metric in (ours, keras_own):
            metric.update_state(np.array(true), logits[np.array(predicted)], np.array(weights))
    assert float(ours.result()) == pytest.approx(4 / 5)
    assert float(keras_own.result()) != pytest.approx(4 / 5)  # (1/2 + 3/4) / (2/2 + 3/4) = 0.714
    ours.reset_state()
    assert float(ours.result()) == 0.0
