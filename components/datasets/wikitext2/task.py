"""WikiText-2 masked language modelling with a BERT model trained from scratch.

`prepare()` takes the WordPiece vocabulary the Transform learnt on the training split
(components/transform/wordpiece_analysis.py; with `transform.enabled: false` it learns it
itself: keras-hub's `compute_word_piece_vocabulary`'s, learnt faster by `wordpiece.py`),
`vocab.txt` in the assets, and the most frequent training token (`mlm_baseline.json`):
always predicting it at masked positions is the baseline the model's masked-token
accuracy is compared with.

Batches are `(x, mask_ids, mask_weights)` as `keras_hub.models.BertMaskedLMPreprocessor`
makes them: `x` holds `token_ids` (with the selected tokens masked), `padding_mask`,
`segment_ids` and `mask_positions`. The masking is the BERT recipe (select
`mask_selection_rate` of the non-special tokens, at most `mask_selection_length` a line;
replace 80 % of them by `[MASK]`, 10 % by a random token, keep 10 %), written with
stateless random ops seeded per batch: with `training=False` a given `seed` yields the
same masks on every pass, so two evaluations of one model agree exactly; with
`training=True` every pass (epoch) draws new masks.

Under TensorFlow, lines are batched with lines of about their length (sorted within windows of
`SORT_WINDOW` batches; for training, after the shuffle, the batches shuffled again) and each
batch is cut to its longest line and to its most masked tokens: the attention and the
vocabulary-wide head then work on what the lines hold, not on padding (the shortened BERT
guide pair: 512 tokens and 96 mask slots a line, where WikiText-2's lines average about 165
tokens and 25 masks). The losses divide by the weights' sum and the metric is `MaskedAccuracy`
(masked_accuracy.py), so neither changes with a batch's slot count. Under JAX, where each new
shape is a new compiled program, batches keep the full shapes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import keras
import keras_hub
import numpy as np
import tensorflow as tf

from kflow.components.datasets.task import LearntByTransform, Task
from kflow.components.datasets.wikitext2 import fill_mask
from kflow.components.datasets.wikitext2.masked_accuracy import MaskedAccuracy
from kflow.components.datasets.wikitext2.wordpiece import learn_vocabulary
from kflow.components.models import build_model
from kflow.pipeline.dsl.artifacts import Examples, TransformGraph

VOCAB_FILE = "vocab.txt"
BASELINE_FILE = "mlm_baseline.json"
RESERVED_TOKENS = ["[PAD]", "[CLS]", "[SEP]", "[UNK]", "[MASK]"]

# model_options read by the task (the data side); the others go to the model factory.
DATA_OPTIONS: dict[str, Any] = {
    "vocabulary_size": 8000,
    "lowercase": True,
    "sequence_length": 128,
    "mask_selection_rate": 0.25,
    "mask_selection_length": 32,
    "mask_token_rate": 0.8,
    "random_token_rate": 0.1,
}
# Batches whose lines are sorted by length together (see the docstring): 2,048 lines at BERT's batch of 128.
SORT_WINDOW = 16
# The options that shape what the Transform learns (the vocabulary, the baseline's first sequence_length - 2 tokens).
GRAPH_OPTIONS = ("vocabulary_size", "lowercase", "sequence_length")
MODEL_OPTIONS = {"num_layers", "hidden_dim", "num_heads", "intermediate_dim", "dropout"}


class WikiText2Task(LearntByTransform, Task):
    name = "wikitext2"
    default_model = "bert_mlm"
    monitor = "val_masked_accuracy"
    monitor_mode = "max"
    op_libraries = ("tensorflow_text",)  # keras-hub's WordPiece tokenizer runs its ops in the dataset.

    def __init__(self, schema, model_name: str | None = None, model_options: dict | None = None):
        super().__init__(schema, model_name, model_options)
        self.check_options(DATA_OPTIONS, MODEL_OPTIONS)
        features = {feature.name for feature in schema.feature}
        if "text" not in features:
            raise ValueError(f"the wikitext2 task needs a 'text' feature in the schema; it has {sorted(features)}")
        self.options = {**DATA_OPTIONS, **{k: v for k, v in self.model_options.items() if k in DATA_OPTIONS}}
        rate, length = self.options["mask_selection_rate"], self.options["mask_selection_length"]
        if not 0 < rate <= 1:
            raise ValueError(f"mask_selection_rate must be in (0, 1], got {rate}")
        if not 1 <= length <= self.options["sequence_length"]:
            raise ValueError(f"mask_selection_length must be in [1, sequence_length], got {length}")
        if self.options["mask_token_rate"] + self.options["random_token_rate"] > 1:
            raise ValueError("mask_token_rate + random_token_rate must be at most 1")
        # Batches cut to their lines (the module's docstring); bench/model_flops.py counts the full shapes too.
        self.trim_batches = keras.backend.backend() == "tensorflow"
        self.vocabulary: list[str] | None = None
        self.baseline: dict[str, Any] | None = None
        self._tokenizer: keras_hub.models.BertTokenizer | None = None
        self._scoring_tokenizer: keras_hub.models.BertTokenizer | None = None

    # --- Assets -------------------------------------------------------------------------------------

    def prepare(self, examples: Examples, assets_dir: Path) -> dict[str, Any]:
        """Learns the WordPiece vocabulary on Split-train and finds the most frequent training token (or, given a
        transform graph, takes both from it: nothing is read from the data)."""
        assets_dir = Path(assets_dir)
        assets_dir.mkdir(parents=True, exist_ok=True)
        if self.transform_graph is not None:
            self._take_graph(self.transform_graph)
        else:
            lines = _read_text(examples, "train").batch(1024)
            self.set_vocabulary(
                learn_vocabulary(
                    lines,
                    int(self.options["vocabulary_size"]),
                    lowercase=bool(self.options["lowercase"]),
                    reserved_tokens=RESERVED_TOKENS,
                )
            )
            self.baseline = self.training_baseline(examples)
        (assets_dir / VOCAB_FILE).write_text("\n".join(self.vocabulary) + "\n")
        (assets_dir / BASELINE_FILE).write_text(json.dumps(self.baseline, indent=2) + "\n")
        return {"vocabulary_size": len(self.vocabulary), **self.baseline}

    def training_baseline(self, examples: Examples) -> dict[str, Any]:
        """The most frequent training token the model sees (among the first sequence_length - 2 of each line)."""
        counts = np.zeros(len(self.vocabulary), dtype=np.int64)
        for token_ids in _read_text(examples, "train").batch(1024).map(self._pack).as_numpy_iterator():
            counts += np.bincount(token_ids.ravel(), minlength=len(self.vocabulary))
        counts[self._special_ids()] = 0
        top = int(np.argmax(counts))
        return {
            "most_frequent_token": self.vocabulary[top],
            "most_frequent_token_id": top,
            "most_frequent_token_share": float(counts[top] / max(counts.sum(), 1)),
            "train_tokens": int(counts.sum()),
        }

    def _take_graph(self, graph: TransformGraph) -> None:
        learnt = self.learnt_with(graph, {name: self.options[name] for name in GRAPH_OPTIONS})
        self.set_vocabulary((graph.path / learnt["wordpiece_vocabulary"]).read_text().splitlines())
        self.baseline = dict(learnt["baseline"])

    def load_assets(self, assets_dir: Path) -> None:
        vocab_file = Path(assets_dir) / VOCAB_FILE
        if not vocab_file.exists():
            raise FileNotFoundError(f"{vocab_file} is missing: run prepare() first")
        self.set_vocabulary(vocab_file.read_text().splitlines())
        baseline_file = Path(assets_dir) / BASELINE_FILE
        self.baseline = json.loads(baseline_file.read_text()) if baseline_file.exists() else None

    def set_vocabulary(self, vocabulary: list[str]) -> None:
        missing = [token for token in RESERVED_TOKENS if token not in vocabulary]
        if missing:
            raise ValueError(f"the WordPiece vocabulary lacks the special tokens {missing}")
        self.vocabulary = list(vocabulary)
        self._tokenizer = keras_hub.models.BertTokenizer(
            vocabulary=self.vocabulary, lowercase=bool(self.options["lowercase"])
        )
        self._scoring_tokenizer = None

    @property
    def tokenizer(self) -> keras_hub.models.BertTokenizer:
        if self._tokenizer is None:
            raise ValueError("the wikitext2 task has no vocabulary yet: call prepare() or load_assets() first")
        return self._tokenizer

    @property
    def scoring_tokenizer(self) -> keras_hub.models.BertTokenizer:
        """The tokenizer of text to score: the training one's vocabulary and case, `[MASK]` read as the mask token."""
        if self._scoring_tokenizer is None:
            self._scoring_tokenizer = keras_hub.models.BertTokenizer(
                vocabulary=self.tokenizer.vocabulary,
                lowercase=bool(self.options["lowercase"]),
                special_tokens_in_strings=True,
            )
        return self._scoring_tokenizer

    special_tokens = RESERVED_TOKENS

    def _special_ids(self) -> list[int]:
        return [self.vocabulary.index(token) for token in RESERVED_TOKENS]

    # --- Data ---------------------------------------------------------------------------------------

    def _pack(self, lines: tf.Tensor) -> tf.Tensor:
        """Tokenizes a batch of lines into `[batch, sequence_length]` ids: [CLS] tokens [SEP] [PAD]..."""
        tokenizer = self.tokenizer
        packer = keras_hub.layers.StartEndPacker(
            sequence_length=int(self.options["sequence_length"]),
            start_value=tokenizer.cls_token_id,
            end_value=tokenizer.sep_token_id,
            pad_value=tokenizer.pad_token_id,
        )
        return tf.cast(packer(tokenizer(lines)), tf.int32)

    def dataset(
        self, examples: Examples, split: str, *, batch_size: int, training: bool, seed: int, shuffle_buffer: int = 0
    ) -> tf.data.Dataset:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        lines = _read_text(examples, split)
        if training and shuffle_buffer > 0:
            lines = lines.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True)
        trim = self.trim_batches
        if trim:
            batches = self._length_sorted(lines, batch_size, drop_remainder=training)
            if training:
                batches = batches.shuffle(SORT_WINDOW, seed=seed, reshuffle_each_iteration=True)
        else:
            batches = lines.batch(batch_size, drop_remainder=training)
            batches = batches.map(self._pack, num_parallel_calls=tf.data.AUTOTUNE)
        # One random number a batch seeds its masks: the same numbers on every pass when evaluating,
        # new ones every pass when training.
        seeds = tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=training)
        masker = self.masker(seed, trim=trim)
        return tf.data.Dataset.zip(batches, seeds).map(masker, num_parallel_calls=tf.data.AUTOTUNE).prefetch(2)

    def _length_sorted(self, lines: tf.data.Dataset, batch_size: int, drop_remainder: bool) -> tf.data.Dataset:
        """Batches of packed lines, each window of SORT_WINDOW batches sorted by the lines' length (stable: the
        same order on every pass of unshuffled lines). A window holds whole batches; the last one's remainder is
        dropped before sorting, so the lines dropped are those the unsorted batches would drop, not the longest."""
        pad_id = self.tokenizer.pad_token_id

        def sort(token_ids: tf.Tensor) -> tf.Tensor:
            if drop_remainder:
                token_ids = token_ids[: tf.shape(token_ids)[0] // batch_size * batch_size]
            return tf.gather(token_ids, tf.argsort(_lengths(token_ids, pad_id), stable=True))

        windows = lines.batch(batch_size * SORT_WINDOW).map(self._pack, num_parallel_calls=tf.data.AUTOTUNE)
        return windows.map(sort).unbatch().batch(batch_size, drop_remainder=drop_remainder)

    def masker(self, seed: int, trim: bool = False):
        """The function `(token_ids [batch, length], batch_seed) -> (x, mask_ids, mask_weights)`; with `trim`, the
        batch cut to its longest line and its most masked tokens."""
        options = self.options
        tokenizer = self.tokenizer
        special_ids = tf.constant(self._special_ids(), dtype=tf.int32)
        vocabulary_size = len(self.vocabulary)
        selections = int(options["mask_selection_length"])
        rate = float(options["mask_selection_rate"])
        mask_rate = float(options["mask_token_rate"])
        random_rate = float(options["random_token_rate"])

        def mask(token_ids: tf.Tensor, batch_seed: tf.Tensor):
            keys = tf.random.experimental.stateless_split(tf.stack([batch_seed, tf.constant(seed, tf.int64)]), 4)
            if trim:
                token_ids = token_ids[:, : tf.reduce_max(_lengths(token_ids, tokenizer.pad_token_id))]
            shape = tf.shape(token_ids)
            selectable = tf.reduce_all(token_ids[..., None] != special_ids, axis=-1)
            selected = selectable & (tf.random.stateless_uniform(shape, keys[0]) < rate)
            # Keep at most `selections` of them, chosen at random: the top-k of random priorities.
            priority = tf.where(selected, tf.random.stateless_uniform(shape, keys[1]), -1.0)
            top, positions = tf.math.top_k(priority, k=tf.minimum(selections, shape[1]) if trim else selections)
            if trim:  # The slots of the line with the most masked tokens, at least one.
                slots = tf.maximum(tf.reduce_max(tf.reduce_sum(tf.cast(top >= 0.0, tf.int32), axis=1)), 1)
                top, positions = top[:, :slots], positions[:, :slots]
            weights = top >= 0.0
            positions = tf.where(weights, positions, 0)
            mask_ids = tf.where(weights, tf.gather(token_ids, positions, batch_dims=1), 0)
            draw = tf.random.stateless_uniform(tf.shape(positions), keys[2])
            random_tokens = tf.random.stateless_uniform(
                tf.shape(positions), keys[3], minval=0, maxval=vocabulary_size, dtype=tf.int32
            )
            replacement = tf.where(
                draw < mask_rate,
                tokenizer.mask_token_id,
                tf.where(draw < mask_rate + random_rate, random_tokens, mask_ids),
            )
            # Unused slots point at position 0 ([CLS], never selected) and write its own value back.
            replacement = tf.where(weights, replacement, token_ids[:, :1])
            rows = tf.broadcast_to(tf.range(shape[0])[:, None], tf.shape(positions))
            masked = tf.tensor_scatter_nd_update(token_ids, tf.stack([rows, positions], axis=-1), replacement)
            x = {
                "token_ids": masked,
                "padding_mask": token_ids != tokenizer.pad_token_id,
                "segment_ids": tf.zeros_like(token_ids),
                "mask_positions": positions,
            }
            return x, mask_ids, tf.cast(weights, tf.float32)

        return mask

    # --- Scoring new text (kflow predict: fill_mask.py) -----------------------------------------------

    def inputs(self, serialized: tf.Tensor) -> dict[str, tf.Tensor]:
        """The model's inputs for lines to score: each `[MASK]` in a line is a position to fill."""
        text = tf.io.parse_example(serialized, {"text": tf.io.FixedLenFeature([], tf.string)})["text"]
        return fill_mask.mask_inputs(self, text)

    def prediction_entries(self, keys, serialized, predict, classes) -> list[dict[str, Any]]:
        return fill_mask.fill_entries(self, keys, serialized, predict)

    def prediction_table(self, classes: list[str]) -> fill_mask.FilledMaskTable:
        return fill_mask.FilledMaskTable()

    # --- Model --------------------------------------------------------------------------------------

    def build_model(self) -> keras.Model:
        if self.vocabulary is None:
            raise ValueError("the wikitext2 task has no vocabulary yet: call prepare() or load_assets() first")
        model_kwargs = {k: v for k, v in self.model_options.items() if k in MODEL_OPTIONS}
        return build_model(
            self.model_name,
            vocabulary_size=len(self.vocabulary),
            sequence_length=int(self.options["sequence_length"]),
            **model_kwargs,
        )

    def loss(self) -> keras.losses.Loss:
        # BertMaskedLM returns logits; per-example losses are [batch, mask_selection_length].
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=None)

    def metrics(self) -> list[keras.metrics.Metric]:
        return [MaskedAccuracy()]

    def baseline_accuracy(self, examples: Examples, split: str, *, batch_size: int = 256, seed: int = 0) -> float:
        """Masked-token accuracy of always predicting the most frequent training token, on `split`.

        Uses the evaluation masks of `dataset(..., training=False, seed=seed)`, so it is
        comparable with a model evaluated on the same split with the same seed.
        """
        if self.baseline is None:
            raise ValueError("no baseline token: call prepare() (or load_assets() on its assets) first")
        token = self.baseline["most_frequent_token_id"]
        hits = total = 0.0
        batches = self.dataset(examples, split, batch_size=batch_size, training=False, seed=seed)
        for _, mask_ids, weights in batches.as_numpy_iterator():
            hits += float(((mask_ids == token) * weights).sum())
            total += float(weights.sum())
        if total == 0:
            raise ValueError(f"split {split!r} has no maskable tokens")
        return hits / total


def _lengths(token_ids: tf.Tensor, pad_id: int) -> tf.Tensor:
    """Each packed line's tokens, [CLS] and [SEP] included: `[batch]`."""
    return tf.reduce_sum(tf.cast(token_ids != pad_id, tf.int32), axis=1)


def _read_text(examples: Examples, split: str) -> tf.data.Dataset:
    """The `text` feature of a split, one scalar string a line."""
    files = examples.split_files(split)
    records = tf.data.TFRecordDataset(files, compression_type="GZIP")
    spec = {"text": tf.io.FixedLenFeature([], tf.string)}
    return records.map(lambda record: tf.io.parse_single_example(record, spec)["text"])
