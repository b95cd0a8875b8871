"""The Quora transform: the text classifier's vocabulary and the class weights, from Split-train by Beam.

What `QuoraTask.prepare` used to learn in every training process with `TextVectorization.adapt`: the
`max_tokens - 2` most frequent unigrams and bigrams (`tokens`: the same standardization, split and n-grams as
TextVectorization, ties broken as its adapt breaks them, so the vocabulary is the same), and the class weights
from the label's training counts. The preprocessing model is that TextVectorization, built with the vocabulary.
"""

from __future__ import annotations

from typing import Any

import keras

from kflow.components.transform.analyzers import Analyzer

VOCABULARY = "tokens.text"


def text_analyzers(task: Any) -> tuple[list[Analyzer], dict[str, str]]:
    top = int(task.options["max_tokens"]) - 2  # "" (padding) and "[UNK]" take the first two indices
    tokens = Analyzer(VOCABULARY, "tokens", "text", {"top_k": top, "ngrams": task.model_kwargs["ngrams"],
                                                      "ties": "descending"})  # fmt: skip
    return [tokens, Analyzer("label.counts", "counts", "label")], {"text": "string", "label": "label"}


def text_plan(task: Any, results: dict[str, Any]) -> dict[str, Any]:
    """{"vocabulary", "class_weights", "train_examples", "positive_rate", "inputs", ...} from the results."""
    vocabulary = [token for token, _ in results[VOCABULARY]["ranked"]]
    if not vocabulary:
        raise ValueError("the training split of the quora Examples holds no text to learn a vocabulary from")
    counts = {int(label): count for label, count in results["label.counts"]["ranked"]}
    if set(counts) - {0, 1}:
        raise ValueError(f"quora labels must be 0 or 1; the training split holds {sorted(counts)}")
    total, positives = sum(counts.values()), counts.get(1, 0)
    if positives in (0, total):
        raise ValueError(f"the training split needs both classes; it has {positives} positives out of {total}")
    weights = {"0": 1.0, "1": 1.0}
    if task.options["class_weighting"] == "balanced":
        weights = {"0": total / (2 * (total - positives)), "1": total / (2 * positives)}
    return {
        "label": "label",
        "vocabulary": vocabulary,
        "ngrams": task.model_kwargs["ngrams"],
        "class_weights": weights,
        "train_examples": total,
        "positive_rate": positives / total,
        "inputs": {"text": "string"},
        "left_out": {},
    }


def text_preprocessing(plan: dict[str, Any]) -> keras.Model:
    """Raw questions in, token indices out: TextVectorization given the vocabulary (no adapt)."""
    text = keras.Input(shape=(), dtype="string", name="text")
    vectorize = keras.layers.TextVectorization(vocabulary=plan["vocabulary"], ngrams=plan["ngrams"], name="tokens")
    return keras.Model({"text": text}, {"tokens": vectorize(text)}, name="preprocessing")
