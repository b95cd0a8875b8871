"""QuoraTask on tiny fixture Examples: vocabulary, class weights, batches, training, save/load and serving."""

from __future__ import annotations

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from kflow.components.datasets.quora.task import CLASS_WEIGHTS_FILE, VOCAB_FILE, QuoraTask
from tests.components.datasets.text_fixtures import text_schema, write_quora

SCHEMA = text_schema({"qid": "BYTES", "text": "BYTES", "label": "INT"})
OPTIONS = {"max_tokens": 500, "embedding_dim": 16, "hidden_dim": 16, "max_length": 24}


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    root = tmp_path_factory.mktemp("quora")
    examples = write_quora(root / "examples")
    task = QuoraTask(SCHEMA, model_options=OPTIONS)
    figures = task.prepare(examples, root / "assets")
    return task, examples, root / "assets", figures


def train_labels(examples):
    labels = []
    for path in examples.split_files("train"):
        for record in tf.data.TFRecordDataset(path, compression_type="GZIP").as_numpy_iterator():
            labels.append(tf.train.Example.FromString(record).features.feature["label"].int64_list.value[0])
    return np.array(labels)


def test_prepare_saves_vocabulary_and_balanced_class_weights(prepared):
    task, examples, assets, figures = prepared
    labels = train_labels(examples)
    n, positives = len(labels), int(labels.sum())
    assert figures["train_examples"] == n == 400
    assert figures["positive_rate"] == pytest.approx(positives / n)
    weights = json.loads((assets / CLASS_WEIGHTS_FILE).read_text())
    assert weights["1"] == pytest.approx(n / (2 * positives)) and weights["0"] == pytest.approx(
        n / (2 * (n - positives))
    )
    # Balanced: both classes weigh the same in total.
    assert positives * weights["1"] == pytest.approx((n - positives) * weights["0"])

    vocabulary = (assets / VOCAB_FILE).read_text().split("\n")[:-1]
    assert {"how", "stupid", "why"} <= set(vocabulary) and "" not in vocabulary and "[UNK]" not in vocabulary
    assert any(" " in token for token in vocabulary), "bigrams are part of the vocabulary"
    fresh = QuoraTask(SCHEMA, model_options=OPTIONS)
    fresh.load_assets(assets)
    assert fresh.vocabulary == vocabulary == task.vocabulary
    assert fresh.class_weights == pytest.approx(task.class_weights)


def test_batches_carry_class_weights_when_training_only(prepared):
    task, examples, _, _ = prepared
    text, label, weight = next(iter(task.dataset(examples, "train", batch_size=64, training=True, seed=0)))
    assert text.dtype == tf.string and text.shape == (64,)
    assert label.dtype == tf.float32 and label.shape == (64, 1)
    assert weight.shape == (64,)
    expected = np.where(label.numpy()[:, 0] == 1, task.class_weights[1], task.class_weights[0])
    np.testing.assert_allclose(weight.numpy(), expected, rtol=1e-6)

    batches = list(task.dataset(examples, "test", batch_size=64, training=False, seed=0))
    assert sum(len(b[0]) for b in batches) == 100  # the last, partial batch is kept
    assert all((b[2].numpy() == 1).all() for b in batches)


def test_training_reduces_the_loss_and_the_model_serves_raw_strings(prepared, tmp_path):
    task, examples, _, _ = prepared
    keras.utils.set_random_seed(0)
    model = task.build_model()
    loss_fn = task.loss()
    optimizer = keras.optimizers.Adam(learning_rate=1e-2)
    batch_size = 32

    @tf.function
    def step(text, label, weight):
        with tf.GradientTape() as tape:
            per_example = loss_fn(label, model(text, training=True), weight)
            loss = tf.nn.compute_average_loss(per_example, global_batch_size=batch_size)
        optimizer.apply_gradients(
            zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables, strict=True)
        )
        return loss

    def eval_loss():
        batches = task.dataset(examples, "eval", batch_size=batch_size, training=False, seed=0)
        return float(np.mean([float(tf.reduce_mean(loss_fn(y, model(x), w))) for x, y, w in batches]))

    before = eval_loss()
    for _ in range(5):
        for text, label, weight in task.dataset(examples, "train", batch_size=batch_size, training=True, seed=0):
            step(text, label, weight)
    after = eval_loss()
    assert after < before / 2, (before, after)

    metrics = {metric.name: metric for metric in task.metrics()}
    for text, label, _ in task.dataset(examples, "test", batch_size=batch_size, training=False, seed=0):
        for metric in metrics.values():
            metric.update_state(label, model(text))
    # The fixture's insincere questions use their own words: the classifier separates them.
    assert float(metrics["pr_auc"].result()) > 0.9
    assert float(metrics["accuracy"].result()) > 0.9

    path = tmp_path / "model.keras"
    model.save(path)
    restored = keras.models.load_model(path)
    questions = tf.constant(["why are all liberals so stupid?", "how do I learn to start work?"])
    np.testing.assert_array_equal(model.predict(questions, verbose=0), restored.predict(questions, verbose=0))
    insincere, sincere = restored.predict(questions, verbose=0)[:, 0]
    assert insincere > 0.5 > sincere


GUIDE_MODULE = """
import keras


def build_model(schema, options):  # The guide's classifier: two hidden layers, over kflow's vocabulary.
    text = keras.Input(shape=(), dtype="string", name="text")
    vectorize = keras.layers.TextVectorization(
        vocabulary=options["vocabulary"], ngrams=options["ngrams"], output_sequence_length=24
    )
    embedded = keras.layers.Embedding(len(options["vocabulary"]) + 2, 16, mask_zero=True)(vectorize(text))
    hidden = keras.layers.GlobalAveragePooling1D()(embedded)
    hidden = keras.layers.Dense(options["units"][0], activation="relu")(hidden)
    hidden = keras.layers.Dense(options["units"][1], activation="relu")(hidden)
    return keras.Model(text, keras.layers.Dense(1, activation="sigmoid")(hidden))
"""


def test_a_users_model_gets_the_learnt_vocabulary_and_trains(prepared):
    from kflow.components.datasets.user_module import load_module, with_user_module

    task, examples, assets, _ = prepared
    users = with_user_module(QuoraTask, load_module(GUIDE_MODULE))(SCHEMA, model_options={**OPTIONS, "units": [16, 8]})
    with pytest.raises(ValueError, match="no vocabulary yet"):
        users.build_model()
    users.load_assets(assets)
    model = users.build_model()
    vectorizer = next(layer for layer in model.layers if isinstance(layer, keras.layers.TextVectorization))
    assert vectorizer.get_vocabulary()[2:] == task.vocabulary  # "" and "[UNK]" come first
    assert [layer.units for layer in model.layers if isinstance(layer, keras.layers.Dense)] == [16, 8, 1]
    keras.utils.set_random_seed(0)
    model.compile(optimizer=keras.optimizers.Adam(1e-2), loss=users.loss())
    train = users.dataset(examples, "train", batch_size=32, training=True, seed=0)
    history = model.fit(train, epochs=5, verbose=0).history["loss"]
    assert history[-1] < history[0] / 2, history


def test_bad_options_and_schemas_are_refused(tmp_path):
    with pytest.raises(ValueError, match="unknown trainer.model_options for quora: sequence_length"):
        QuoraTask(SCHEMA, model_options={"sequence_length": 3})
    with pytest.raises(ValueError, match="class_weighting"):
        QuoraTask(SCHEMA, model_options={"class_weighting": "inverse"})
    with pytest.raises(ValueError, match=r"needs the features \['label'\]"):
        QuoraTask(text_schema({"text": "BYTES"}))
    examples = write_quora(tmp_path / "examples", counts={"train": 20}, positive_rate=0.0)
    with pytest.raises(ValueError, match="needs both classes"):
        QuoraTask(SCHEMA).prepare(examples, tmp_path / "assets")


def test_a_train_split_smaller_than_one_whole_batch_is_refused_by_name(prepared):
    """The Quora task trains on whole batches: with fewer examples than one, Keras' fit met an empty dataset and
    failed with a bare StopIteration (the BERT guide pair, cut to 400 lines)."""
    from kflow.components.trainer.config import TrainConfig
    from kflow.components.trainer.training import split_sizes

    task, examples, _, _ = prepared

    def make(split, training, batch_size):
        return task.dataset(examples, split, batch_size=batch_size, training=training, seed=0)

    train = split_sizes(make, examples, TrainConfig(batch_size=32))[0]
    assert split_sizes(make, examples, TrainConfig(batch_size=train))[2] == 1
    with pytest.raises(
        ValueError, match=f"holds {train} examples, fewer than one batch of trainer.batch_size {train + 1}"
    ):
        split_sizes(make, examples, TrainConfig(batch_size=train + 1))


PAIR_MODULE = """
import keras


def build_model(schema, options):
    text = keras.Input(shape=(), dtype="string")
    vectorize = keras.layers.TextVectorization(vocabulary=options["vocabulary"], output_sequence_length=24)
    hidden = keras.layers.GlobalAveragePooling1D()(keras.layers.Embedding(len(options["vocabulary"]) + 2, 16)(
        vectorize(text)))
    return keras.Model(text, keras.layers.Dense(options.get("units", 2), activation="softmax")(hidden))


def loss():
    return keras.losses.SparseCategoricalCrossentropy()


def metrics():
    return [keras.metrics.SparseCategoricalAccuracy(), keras.metrics.AUC()]
"""


def test_keras_ios_two_class_softmax_head_gives_the_tasks_one_probability(prepared):
    """keras.io's binary text classifiers end in Dense(2, activation="softmax"), with a sparse categorical loss;
    the task, its metrics, Evaluator and serving read one probability: kflow takes the second column, and the
    module's loss gets the pair back. Before, training failed in Keras (`target.shape=(256, 1), output.shape=(None,
    2)`); any other head is one line naming its layer."""
    from kflow.components.datasets.user_module import UserModuleError, load_module, with_user_module

    task, examples, assets, _ = prepared
    users = with_user_module(QuoraTask, load_module(PAIR_MODULE, "pair_model.py"))(SCHEMA, model_options=OPTIONS)
    users.load_assets(assets)
    model = users.build_model()
    x, y, _ = next(users.dataset(examples, "eval", batch_size=16, training=False, seed=0).as_numpy_iterator())
    p = model.predict_on_batch(x)
    pair = keras.Model(model.input, model.get_layer(index=-2).output).predict_on_batch(x)
    assert p.shape == (len(y), 1) and pair.shape == (len(y), 2)
    np.testing.assert_allclose(p, pair[:, 1:], rtol=1e-6)
    expected = keras.losses.SparseCategoricalCrossentropy(reduction=None)(y, pair)
    np.testing.assert_allclose(users.loss()(y, p), expected, rtol=1e-4)
    # The module's metrics: SparseCategoricalAccuracy reads the pair (fed p alone, its argmax was always class 0:
    # the share of negatives, silently), AUC the one probability.
    accuracy, auc = users.metrics()
    accuracy.update_state(y, p)
    auc.update_state(y, p)
    assert float(accuracy.result()) == pytest.approx(float(np.mean(np.argmax(pair, axis=-1) == y.reshape(-1))))
    assert float(auc.result()) == pytest.approx(float(keras.metrics.AUC()(y, pair[:, 1:])), abs=1e-6)
    keras.utils.set_random_seed(0)
    model.compile(optimizer=keras.optimizers.Adam(1e-2), loss=users.loss(), metrics=users.metrics())
    history = model.fit(users.dataset(examples, "train", batch_size=32, training=True, seed=0), epochs=5, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0] / 2, history.history
    assert history.history["sparse_categorical_accuracy"][-1] > 0.8 and history.history["auc"][-1] > 0.8, (
        history.history
    )

    three = with_user_module(QuoraTask, load_module(PAIR_MODULE, "three_model.py"))(
        SCHEMA, model_options={**OPTIONS, "units": 3}
    )
    three.load_assets(assets)
    with pytest.raises(UserModuleError) as refused:
        three.build_model()
    assert "gives 3 value(s) a record by a softmax; the task predicts the probability of its positive class" in str(
        refused.value
    )


# tensorflow.org/tutorials/keras/text_classification's model and compile, the TextVectorization it applies to the
# dataset as the model's first layer: a Sequential ending in one logit, its loss taking logits.
TEXT_CLASSIFICATION = """
import tensorflow as tf
from tensorflow.keras import layers, losses


def build_model(schema, options):
    vectorize_layer = layers.TextVectorization(vocabulary=options["vocabulary"], output_sequence_length=24)
    model = tf.keras.Sequential([
        vectorize_layer,
        layers.Embedding(len(options["vocabulary"]) + 2, 16),
        layers.Dropout(0.2),
        layers.GlobalAveragePooling1D(),
        layers.Dropout(0.2),
        layers.Dense(1)])
    model.compile(loss=losses.BinaryCrossentropy(from_logits=True), optimizer="adam",
                  metrics=[tf.metrics.BinaryAccuracy(threshold=0.0)])
    return model
"""


def test_tensorflow_orgs_text_classifier_of_one_logit_gives_the_tasks_probability(prepared):
    """The tutorial's head is `Dense(1)` and its loss `BinaryCrossentropy(from_logits=True)`, in `compile`: kflow
    refused the head (no activation) and ignored the compiled loss. The model now ends in the sigmoid of its logit,
    p, and trains on the same loss of p."""
    from kflow.components.datasets.user_module import load_module, with_user_module

    task, examples, assets, _ = prepared
    users = with_user_module(QuoraTask, load_module(TEXT_CLASSIFICATION, "text_model.py"))(
        SCHEMA, model_options=OPTIONS
    )
    users.load_assets(assets)
    model = users.build_model()
    x, y, _ = next(users.dataset(examples, "eval", batch_size=16, training=False, seed=0).as_numpy_iterator())
    p = model.predict_on_batch(x)
    logit = keras.Model(model.input, model.get_layer(index=-2).output).predict_on_batch(x)
    assert p.shape == (len(y), 1)
    np.testing.assert_allclose(p, 1 / (1 + np.exp(-logit)), rtol=1e-5)
    expected = keras.losses.BinaryCrossentropy(from_logits=True, reduction=None)(y, logit)
    np.testing.assert_allclose(users.loss()(y, p), expected, rtol=1e-3)
    keras.utils.set_random_seed(0)
    model.compile(optimizer=keras.optimizers.Adam(1e-2), loss=users.loss())
    history = model.fit(users.dataset(examples, "train", batch_size=32, training=True, seed=0), epochs=5, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0] / 2, history.history
