"""Scoring text with the masked language model: each `[MASK]` in a line filled with the model's likeliest tokens.

What `kflow predict` gives for WikiText-2, as a fill-mask pipeline does: the line is tokenized as in training (the
WordPiece vocabulary, lowercased as trained, cut to `sequence_length`), `[MASK]` (any case) kept as the mask token;
the model scores every mask at once (at most `mask_selection_length` a line, the number it was trained to fill);
each gets its `TOP_K` likeliest tokens (special tokens left out) with their probabilities. A line's entry:

    {"key", "text", "filled": the text with each mask replaced by its first token (a `##` continuation joined to
     the word before it),
     "masks": [{"token", "score", "top": [{"token", "score"}, ...]}, ...], "unfilled": masks past those limits}

The CSV keeps the filled line and each mask's first token and probability; the JSON lines and the TFRecord keep all.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import tensorflow as tf

MASK = "[MASK]"
TOP_K = 5
_MASK_TEXT = re.compile(re.escape(MASK), re.IGNORECASE)


class FilledMaskTable:
    """How a fill-mask entry is written: a CSV row (`header`, `row`) and a TFRecord Example (`example`)."""

    def header(self) -> list[str]:
        return ["key", "filled", "predicted_tokens", "scores", "unfilled"]

    def row(self, entry: dict[str, Any]) -> list[Any]:
        masks = entry["masks"]
        tokens = " ".join(mask["token"] for mask in masks)
        scores = " ".join(f"{mask['score']:.6g}" for mask in masks)
        return [entry["key"], entry["filled"], tokens, scores, entry["unfilled"]]

    def example(self, entry: dict[str, Any]) -> tf.train.Example:
        example = tf.train.Example()
        features = example.features.feature
        for name in ("key", "text", "filled"):
            features[name].bytes_list.value.append(entry[name].encode())
        features["unfilled"].int64_list.value.append(entry["unfilled"])
        features["predicted_tokens"].bytes_list.value.extend(mask["token"].encode() for mask in entry["masks"])
        features["scores"].float_list.value.extend(mask["score"] for mask in entry["masks"])
        tops = [choice for mask in entry["masks"] for choice in mask["top"]]
        features["top_tokens"].bytes_list.value.extend(choice["token"].encode() for choice in tops)
        features["top_scores"].float_list.value.extend(choice["score"] for choice in tops)
        return example


def mask_inputs(task: Any, texts: tf.Tensor) -> dict[str, tf.Tensor]:
    """The model's inputs for a batch of lines: their token ids with `[MASK]` as the mask token, and the positions of
    the first `mask_selection_length` masks of each line, in order (unused slots: position 0, [CLS])."""
    import keras_hub

    tokenizer = task.scoring_tokenizer
    options = task.options
    packer = keras_hub.layers.StartEndPacker(
        sequence_length=int(options["sequence_length"]),
        start_value=tokenizer.cls_token_id,
        end_value=tokenizer.sep_token_id,
        pad_value=tokenizer.pad_token_id,
    )
    texts = tf.strings.regex_replace(texts, r"(?i)\[mask\]", f" {MASK} ")  # "Paris[MASK]" is two words too
    token_ids = tf.cast(packer(tokenizer(texts)), tf.int32)
    length = tf.shape(token_ids)[1]
    places = tf.broadcast_to(tf.range(length)[None, :], tf.shape(token_ids))
    # The first masks by place: the top-k of minus their places (the others below every place).
    priority = tf.where(token_ids == tokenizer.mask_token_id, -places, -length - 1)
    top, positions = tf.math.top_k(priority, k=int(options["mask_selection_length"]))
    return {
        "token_ids": token_ids,
        "padding_mask": token_ids != tokenizer.pad_token_id,
        "segment_ids": tf.zeros_like(token_ids),
        "mask_positions": tf.where(top > -length - 1, positions, 0),
    }


def fill_entries(
    task: Any, keys: Sequence[str], serialized: tf.Tensor, predict: Callable[[Any], Any]
) -> list[dict[str, Any]]:
    """A fill-mask entry for each serialized Example (its `text` feature) of a batch, scored by `predict`."""
    texts = tf.io.parse_example(serialized, {"text": tf.io.FixedLenFeature([], tf.string)})["text"]
    inputs = mask_inputs(task, texts)
    logits = np.asarray(predict(inputs), np.float32)  # [batch, mask slots, vocabulary]
    taken = (inputs["token_ids"].numpy() == task.scoring_tokenizer.mask_token_id).sum(axis=1)
    vocabulary = task.vocabulary
    special = [vocabulary.index(token) for token in task.special_tokens]
    entries = []
    for row, (key, text) in enumerate(zip(keys, texts.numpy().tolist(), strict=True)):
        text = text.decode("utf-8")
        filled_count = int(min(taken[row], logits.shape[1]))
        masks = [_choices(logits[row, slot], vocabulary, special) for slot in range(filled_count)]
        pieces = _MASK_TEXT.split(text)
        filled = pieces[0]
        for place, piece in enumerate(pieces[1:]):
            token = masks[place]["token"] if place < len(masks) else MASK
            if token.startswith("##"):  # a WordPiece continuation: part of the word before it
                filled, token = filled.rstrip(" "), token[2:]
            filled += token + piece
        entries.append(
            {"key": key, "text": text, "filled": filled, "masks": masks, "unfilled": len(pieces) - 1 - len(masks)}
        )
    return entries


def _choices(logits: np.ndarray, vocabulary: list[str], special: list[int]) -> dict[str, Any]:
    """The TOP_K likeliest tokens of one mask (probabilities over the whole vocabulary; no special token)."""
    shifted = np.exp(logits - logits.max())
    probabilities = shifted / shifted.sum()
    probabilities[special] = -1.0
    best = np.argsort(-probabilities, kind="stable")[:TOP_K]
    top = [{"token": vocabulary[index], "score": float(probabilities[index])} for index in best]
    return {"token": top[0]["token"], "score": top[0]["score"], "top": top}
