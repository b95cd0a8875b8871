"""kflow's WordPiece learner gives keras-hub's (tensorflow-text's) vocabulary, token for token."""

from __future__ import annotations

import random

import keras_hub
import pytest
import tensorflow as tf
from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib as lib

from kflow.components.datasets.wikitext2.task import RESERVED_TOKENS
from kflow.components.datasets.wikitext2.wordpiece import learn, learn_vocabulary
from tests.conftest import shared_dataset


def zipf_words(seed: int, words: int) -> dict[str, int]:
    """Random words over a small alphabet (so they share many pieces), with Zipf-like counts."""
    rng = random.Random(seed)
    counts = {}
    for rank in range(1, words + 1):
        word = "".join(rng.choice("abcdeéz") for _ in range(rng.randint(1, 14)))
        counts[word] = counts.get(word, 0) + max(1, 20_000 // rank)
    return counts


# The two largest vocabularies (~7 s) in make test-all only.
@pytest.mark.parametrize(
    ("seed", "words", "size"),
    [
        *(pytest.param(*case, marks=pytest.mark.slow) for case in [(0, 3000, 60), (1, 2000, 400)]),
        (2, 800, 2000),
        (3, 5, 40),
    ],
)
def test_learn_matches_the_library_on_generated_words(seed, words, size):
    counts = zipf_words(seed, words)
    expected = lib.learn(counts, size, RESERVED_TOKENS)
    assert learn(counts, size, RESERVED_TOKENS) == expected
    assert len(expected) > len(RESERVED_TOKENS)


@pytest.mark.slow  # ~11 s; make test matches the library on generated words (above)
def test_learn_vocabulary_matches_keras_hub_on_real_wikitext_lines():
    lines = [
        line
        for line in (shared_dataset("wikitext-2") / "valid.txt").read_text(encoding="utf-8").splitlines()
        if len(line) > 100
    ][:300]
    dataset = tf.data.Dataset.from_tensor_slices(lines).batch(128)
    for size, lowercase in [(600, True), (900, False)]:
        expected = keras_hub.tokenizers.compute_word_piece_vocabulary(
            dataset, size, lowercase=lowercase, reserved_tokens=RESERVED_TOKENS
        )
        learnt = learn_vocabulary(dataset, size, lowercase=lowercase, reserved_tokens=RESERVED_TOKENS)
        assert learnt == expected
        assert size * 0.95 <= len(learnt) <= size
