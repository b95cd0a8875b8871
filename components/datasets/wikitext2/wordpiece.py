"""A WordPiece vocabulary, the same as `keras_hub.tokenizers.compute_word_piece_vocabulary` learns, in less time.

keras-hub counts the words with TensorFlow, then learns with tensorflow-text's learner: a binary search for the
token-count threshold that gives about the wanted size, each probe (14 on WikiText-2) four passes of pure Python
over every substring of every word (45 s for WikiText-2's training lines here). This is the same algorithm on
arrays, with the library's own helpers around it. A word's substrings are numbered once; a pass counts the
substrings that start where the current tokens split the word (every start in the first pass, which does not depend
on the threshold and so runs once), with one `bincount`; and the library's rule "lower each prefix's count by the
counts of the longer tokens that hold it, longest first" comes to "a token's count less its one-character-longer
children's raw counts" (the decrements of a whole subtree sum to its root's raw count). Same words, thresholds,
tokens and counts: the same vocabulary, token for token (`tests/components/datasets/wikitext2/test_wordpiece.py`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import tensorflow as tf
from keras_hub.src.tokenizers.word_piece_tokenizer import pretokenize
from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib as lib

JOINER = "##"


def learn_vocabulary(
    lines, vocabulary_size: int, *, lowercase: bool, reserved_tokens: Sequence[str], suffix_indicator: str = JOINER
) -> list[str]:
    """`compute_word_piece_vocabulary(lines, vocabulary_size, lowercase=..., reserved_tokens=...)`'s vocabulary,
    from a `tf.data.Dataset` of batches of lines."""
    words = lines.map(lambda text: pretokenize(text, lowercase, False, True, True), num_parallel_calls=tf.data.AUTOTUNE)
    vocabulary = learn(lib.count_words(words), vocabulary_size, list(reserved_tokens), joiner=suffix_indicator)
    return vocabulary[:vocabulary_size]


def learn(word_counts, vocab_size: int, reserved_tokens: list[str], *, joiner: str = JOINER) -> list[str]:
    """`lib.learn(word_counts, vocab_size, reserved_tokens, joiner=joiner)`, its other arguments left at their
    defaults."""
    if isinstance(word_counts, dict):
        word_counts = word_counts.items()
    params = lib.Params(
        upper_thresh=int(1e7), lower_thresh=10, num_iterations=4, max_input_tokens=int(5e6), max_token_length=50,
        max_unique_chars=1000, vocab_size=vocab_size, slack_ratio=0.05, include_joiner_token=True, joiner=joiner,
        reserved_tokens=reserved_tokens,
    )  # fmt: skip
    upper, lower = lib.get_search_threshs(word_counts, params.upper_thresh, params.lower_thresh)
    all_counts = lib.get_input_words(word_counts, params.reserved_tokens, params.max_token_length)
    allowed_chars = lib.get_allowed_chars(all_counts, params.max_unique_chars)
    words = lib.filter_input_words(all_counts, allowed_chars, params.max_input_tokens)
    substrings = _Substrings(words, joiner)
    char_tokens = lib.extract_char_tokens(words)
    first_pass = substrings.kept_counts(np.ones(len(substrings.slot_word), dtype=bool))
    slack = max(params.slack_ratio * params.vocab_size, 0)
    while True:  # lib.learn_binary_search, as a loop
        thresh = (upper + lower) // 2
        tokens = substrings.select(first_pass, thresh)
        for _ in range(1, params.num_iterations):
            tokens = lib.ensure_all_tokens_exist(char_tokens, tokens, True, joiner)
            tokens = substrings.select(substrings.kept_counts(substrings.split_starts(tokens)), thresh)
        tokens = lib.ensure_all_tokens_exist(char_tokens, tokens, True, joiner)
        vocabulary = lib.generate_final_vocabulary(params.reserved_tokens, char_tokens, tokens)
        size = len(vocabulary)
        if (size <= vocab_size and vocab_size - size <= slack) or lower >= upper or thresh <= 1:
            return vocabulary
        if size > vocab_size:
            lower = thresh + 1
        else:
            upper = thresh - 1


class _Substrings:
    """Every substring of every word, numbered: a token is a substring's text, with the joiner before it when it
    does not start the word. A slot is a (word, start) place; a pair a (slot, end) substring."""

    def __init__(self, words: Sequence[tuple[str, int]], joiner: str):
        ids: dict[str, int] = {}
        texts: list[str] = []
        parents: list[int] = []
        pair_token: list[int] = []
        pair_end: list[int] = []
        pair_count: list[int] = []
        pair_slot: list[int] = []
        slot_word: list[int] = []
        for w, (word, count) in enumerate(words):
            size = len(word)
            for start in range(size):
                slot = len(slot_word)
                slot_word.append(w)
                parent = -1
                for end in range(start + 1, size + 1):
                    text = word[start:end] if start == 0 else joiner + word[start:end]
                    token = ids.get(text)
                    if token is None:
                        token = ids[text] = len(texts)
                        texts.append(text)
                        parents.append(parent)
                    pair_token.append(token)
                    pair_slot.append(slot)
                    pair_end.append(end)
                    pair_count.append(count)
                    parent = token
        self.ids, self.texts = ids, texts
        self.parent = np.asarray(parents, dtype=np.int64)
        self.pair_token = np.asarray(pair_token, dtype=np.int64)
        self.pair_slot = np.asarray(pair_slot, dtype=np.int64)  # a slot's pairs are a run, ends ascending
        self.pair_end = np.asarray(pair_end, dtype=np.int64)
        self.pair_count = np.asarray(pair_count, dtype=np.float64)  # sums stay exact below 2**53
        self.slot_word = np.asarray(slot_word, dtype=np.int64)
        self.word_size = np.asarray([len(word) for word, _ in words], dtype=np.int64)
        self.word_slot = np.concatenate([[0], np.cumsum(self.word_size)[:-1]]).astype(np.int64)

    def kept_counts(self, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Counts the substrings that begin at the slots in `starts` (a mask), each by its word's count; returns
        which tokens were seen and their counts less their children's (what a threshold is compared with)."""
        counted = starts[self.pair_slot]
        tokens = self.pair_token[counted]
        size = len(self.texts)
        seen = np.bincount(tokens, minlength=size) > 0
        raw = np.bincount(tokens, weights=self.pair_count[counted], minlength=size)
        has_parent = self.parent >= 0
        kept = raw - np.bincount(self.parent[has_parent], weights=raw[has_parent], minlength=size)
        return seen, np.rint(kept).astype(np.int64)

    def select(self, counts: tuple[np.ndarray, np.ndarray], thresh: int) -> dict[str, int]:
        """The tokens seen whose count reaches the threshold, with their counts."""
        seen, kept = counts
        chosen = np.flatnonzero(seen & (kept >= thresh))
        return {self.texts[token]: int(kept[token]) for token in chosen}

    def split_starts(self, tokens: dict[str, int]) -> np.ndarray:
        """The slots where the greedy longest-match split of each word by `tokens` starts a piece
        (lib.get_split_indices), none for a word that cannot be split."""
        member = np.zeros(len(self.texts), dtype=bool)
        member[[self.ids[text] for text in tokens if text in self.ids]] = True
        # The longest token at each slot: the last member pair of the slot's run (0: none).
        pairs = np.flatnonzero(member[self.pair_token])
        slots = self.pair_slot[pairs]
        last = np.ones(len(pairs), dtype=bool)
        last[:-1] = slots[:-1] != slots[1:]
        longest = np.zeros(len(self.slot_word), dtype=np.int64)
        longest[slots[last]] = self.pair_end[pairs[last]]
        starts = np.zeros(len(self.slot_word), dtype=bool)
        position = np.zeros(len(self.word_size), dtype=np.int64)
        whole = np.ones(len(self.word_size), dtype=bool)
        active = np.flatnonzero(self.word_size > 0)
        while len(active):
            slot = self.word_slot[active] + position[active]
            end = longest[slot]
            whole[active[end == 0]] = False
            starts[slot[end > 0]] = True
            position[active] = end
            active = active[(end > 0) & (end < self.word_size[active])]
        return starts & whole[self.slot_word]
