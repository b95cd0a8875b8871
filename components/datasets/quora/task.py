"""Quora Insincere Questions: binary classification of raw question text.

`prepare()` adapts the text classifier's vocabulary on the training split (`vocab.txt`
in the assets, one token or bigram a line) and computes balanced class weights from the
training labels (`class_weights.json`): with about 6 % insincere questions, each
positive weighs `n / (2 n_pos)` and each negative `n / (2 n_neg)`, so both classes
count equally in the loss.

Batches are `(text [batch] string, label [batch, 1] float32, sample_weight [batch])`.
Training batches carry the class weights; evaluation batches (`training=False`) weigh
every question 1, so metrics such as PR-AUC describe the real class balance. The model
takes the raw strings (its `TextVectorization` layer is inside), so the saved model
serves questions as they are.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import keras
import tensorflow as tf

from kflow.components.datasets.task import LearntByTransform, Task
from kflow.components.models import build_model
from kflow.pipeline.dsl.artifacts import Examples, TransformGraph

VOCAB_FILE = "vocab.txt"
CLASS_WEIGHTS_FILE = "class_weights.json"

# model_options read by the task; the others go to the model factory.
DATA_OPTIONS: dict[str, Any] = {"max_tokens": 20000, "class_weighting": "balanced"}
MODEL_OPTIONS = {"max_length", "ngrams", "embedding_dim", "hidden_dim", "dropout"}
MODEL_DEFAULTS: dict[str, Any] = {"ngrams": 2}


class QuoraTask(LearntByTransform, Task):
    name = "quora"
    default_model = "text_classifier"
    monitor = "val_pr_auc"
    monitor_mode = "max"

    def __init__(self, schema, model_name: str | None = None, model_options: dict | None = None):
        super().__init__(schema, model_name, model_options)
        self.check_options(DATA_OPTIONS, MODEL_OPTIONS)
        features = {feature.name for feature in schema.feature}
        missing = sorted({"text", "label"} - features)
        if missing:
            raise ValueError(f"the quora task needs the features {missing} in the schema; it has {sorted(features)}")
        self.options = {**DATA_OPTIONS, **{k: v for k, v in self.model_options.items() if k in DATA_OPTIONS}}
        if self.options["class_weighting"] not in ("balanced", "none"):
            raise ValueError(f"class_weighting must be 'balanced' or 'none', got {self.options['class_weighting']!r}")
        self.model_kwargs = {**MODEL_DEFAULTS, **{k: v for k, v in self.model_options.items() if k in MODEL_OPTIONS}}
        self.vocabulary: list[str] | None = None
        self.class_weights: dict[int, float] | None = None

    # --- Assets -------------------------------------------------------------------------------------

    def prepare(self, examples: Examples, assets_dir: Path) -> dict[str, Any]:
        """Adapts the vocabulary on Split-train and computes the class weights from its labels (or, given a
        transform graph, takes them from it: nothing is read from the data)."""
        assets_dir = Path(assets_dir)
        assets_dir.mkdir(parents=True, exist_ok=True)
        if self.transform_graph is not None:
            return self._take_graph(self.transform_graph, assets_dir)
        records = _read(examples, "train").batch(1024)
        vectorize = keras.layers.TextVectorization(
            max_tokens=int(self.options["max_tokens"]), ngrams=self.model_kwargs["ngrams"]
        )
        vectorize.adapt(records.map(lambda text, label: text))
        # Drop the padding token "" and the out-of-vocabulary token "[UNK]": the model adds them back.
        vocabulary = vectorize.get_vocabulary()[2:]
        if not vocabulary:
            raise ValueError("the training split of the quora Examples holds no text to learn a vocabulary from")
        (assets_dir / VOCAB_FILE).write_text("".join(f"{token}\n" for token in vocabulary))

        total = positives = 0
        for _, labels in records.as_numpy_iterator():
            if ((labels != 0) & (labels != 1)).any():
                raise ValueError(f"quora labels must be 0 or 1; the training split holds {sorted(set(labels))}")
            total += len(labels)
            positives += int(labels.sum())
        if positives in (0, total):
            raise ValueError(f"the training split needs both classes; it has {positives} positives out of {total}")
        if self.options["class_weighting"] == "balanced":
            weights = {0: total / (2 * (total - positives)), 1: total / (2 * positives)}
        else:
            weights = {0: 1.0, 1: 1.0}
        (assets_dir / CLASS_WEIGHTS_FILE).write_text(json.dumps({str(k): v for k, v in weights.items()}) + "\n")
        self.vocabulary, self.class_weights = vocabulary, weights
        return {
            "vocabulary_size": len(vocabulary),
            "train_examples": total,
            "positive_rate": positives / total,
            "class_weight_0": weights[0],
            "class_weight_1": weights[1],
        }

    def _take_graph(self, graph: TransformGraph, assets_dir: Path) -> dict[str, Any]:
        wanted = {"max_tokens": self.options["max_tokens"], "ngrams": self.model_kwargs["ngrams"],
                  "class_weighting": self.options["class_weighting"]}  # fmt: skip
        learnt = self.learnt_with(graph, wanted)
        vocabulary_file = graph.path / learnt["analyzers"]["tokens.text"]["file"]
        vocabulary = [line.split("\t")[0] for line in vocabulary_file.read_text().splitlines()]
        weights = {int(label): float(weight) for label, weight in learnt["class_weights"].items()}
        (assets_dir / VOCAB_FILE).write_text("".join(f"{token}\n" for token in vocabulary))
        (assets_dir / CLASS_WEIGHTS_FILE).write_text(json.dumps({str(k): v for k, v in weights.items()}) + "\n")
        self.vocabulary, self.class_weights = vocabulary, weights
        return {"transform_graph": str(graph.uri), "vocabulary_size": len(vocabulary)}

    def load_assets(self, assets_dir: Path) -> None:
        assets_dir = Path(assets_dir)
        for name in (VOCAB_FILE, CLASS_WEIGHTS_FILE):
            if not (assets_dir / name).exists():
                raise FileNotFoundError(f"{assets_dir / name} is missing: run prepare() first")
        self.vocabulary = (assets_dir / VOCAB_FILE).read_text().split("\n")[:-1]
        weights = json.loads((assets_dir / CLASS_WEIGHTS_FILE).read_text())
        self.class_weights = {int(label): float(weight) for label, weight in weights.items()}

    # --- Data ---------------------------------------------------------------------------------------

    def dataset(
        self, examples: Examples, split: str, *, batch_size: int, training: bool, seed: int, shuffle_buffer: int = 0
    ) -> tf.data.Dataset:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        if self.class_weights is None:
            raise ValueError("the quora task has no class weights yet: call prepare() or load_assets() first")
        records = _read(examples, split)
        if training and shuffle_buffer > 0:
            records = records.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True)
        negative, positive = (self.class_weights[0], self.class_weights[1]) if training else (1.0, 1.0)

        def to_batch(text, label):
            weights = tf.where(label == 1, positive, negative)
            return text, tf.cast(label, tf.float32)[:, None], tf.cast(weights, tf.float32)

        batches = records.batch(batch_size, drop_remainder=training)
        return batches.map(to_batch, num_parallel_calls=tf.data.AUTOTUNE).prefetch(2)

    input_features = ["text"]  # what a question to score must hold (the Predictor checks it)
    # The model gives one probability a question, of the positive class (insincere): the contract a user's model is
    # held to (model_checks.contract_problem), which also takes keras.io's Dense(2, activation="softmax").
    output_size = 1
    predicts_probability = True

    def inputs(self, serialized: tf.Tensor) -> tf.Tensor:
        """The questions of Examples without a label ([batch] strings): what `dataset` gives as `x`."""
        return tf.io.parse_example(serialized, {"text": tf.io.FixedLenFeature([], tf.string)})["text"]

    # --- Model --------------------------------------------------------------------------------------

    def build_model(self) -> keras.Model:
        if self.vocabulary is None:
            raise ValueError("the quora task has no vocabulary yet: call prepare() or load_assets() first")
        return build_model(self.model_name, vocabulary=self.vocabulary, **self.model_kwargs)

    def model_context(self) -> dict[str, Any]:
        """The vocabulary learnt on Split-train (most frequent first, without "" and "[UNK]", as
        `TextVectorization(vocabulary=...)` takes it) and its `ngrams`: a user's model reads raw questions."""
        if self.vocabulary is None:
            raise ValueError("the quora task has no vocabulary yet: call prepare() or load_assets() first")
        return {"vocabulary": list(self.vocabulary), "ngrams": self.model_kwargs["ngrams"]}

    def loss(self) -> keras.losses.Loss:
        # The model ends in a sigmoid: it returns probabilities, not logits.
        return keras.losses.BinaryCrossentropy(reduction=None)

    def metrics(self) -> list[keras.metrics.Metric]:
        return [
            keras.metrics.AUC(curve="PR", name="pr_auc"),
            keras.metrics.AUC(curve="ROC", name="roc_auc"),
            keras.metrics.BinaryAccuracy(name="accuracy"),
        ]


def _read(examples: Examples, split: str) -> tf.data.Dataset:
    """(text, label) pairs of a split, scalar string and int64."""
    files = examples.split_files(split)
    spec = {"text": tf.io.FixedLenFeature([], tf.string), "label": tf.io.FixedLenFeature([], tf.int64)}

    def parse(record):
        features = tf.io.parse_single_example(record, spec)
        return features["text"], features["label"]

    return tf.data.TFRecordDataset(files, compression_type="GZIP").map(parse)
