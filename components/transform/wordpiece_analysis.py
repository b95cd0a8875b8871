"""The WikiText-2 transform: the WordPiece vocabulary and the masked-token baseline, learnt from Split-train.

What `WikiText2Task.prepare` learns in the Trainer without a graph: Beam counts the words keras-hub's pretokenizer
makes of every training line (analyzers.py `wordpiece_words`: exact counts per word, merged across workers), then
the WordPiece learner (components/datasets/wikitext2/wordpiece.py, `compute_word_piece_vocabulary`'s algorithm)
makes the vocabulary from those counts, as TensorFlow Text's Beam learner does (words counted in parallel, the
vocabulary learnt from them in one place); the same words and counts give the same vocabulary, token for token.
The baseline (the most frequent training token among the first `sequence_length - 2` of each line) is one more
pass in this process, tokenizing with that vocabulary; its memory is a count a token.
"""

from __future__ import annotations

from typing import Any

from kflow.components.transform.analyzers import Analyzer

WORDS = "text.words"


def wordpiece_analyzers(task: Any) -> tuple[list[Analyzer], dict[str, str]]:
    words = Analyzer(WORDS, "wordpiece_words", "text", {"lowercase": bool(task.options["lowercase"])})
    return [words], {"text": "string"}


def wordpiece_plan(task: Any, results: dict[str, Any], examples: Any) -> dict[str, Any]:
    """{"vocabulary", "baseline", "inputs", ...}: the vocabulary learnt from the word counts, set on `task`, and
    the baseline counted with it over `examples`' Split-train."""
    from kflow.components.datasets.wikitext2.task import RESERVED_TOKENS
    from kflow.components.datasets.wikitext2.wordpiece import learn

    counts = {word: count for word, count in results[WORDS]["ranked"]}
    if not counts:
        raise ValueError("the training split of the wikitext2 Examples holds no text to learn a vocabulary from")
    size = int(task.options["vocabulary_size"])
    vocabulary = learn(counts, size, list(RESERVED_TOKENS))[:size]
    task.set_vocabulary(vocabulary)
    return {
        "vocabulary": vocabulary,
        "baseline": task.training_baseline(examples),
        "inputs": {"text": "string"},
        "left_out": {},
    }


def wordpiece_preprocessing(task: Any) -> Any:
    """Raw lines in, packed token ids out (components/datasets/wikitext2/preprocessing.py)."""
    from kflow.components.datasets.wikitext2.preprocessing import WordPiecePreprocessing

    options = task.options
    return WordPiecePreprocessing(
        task.vocabulary, options["lowercase"], options["sequence_length"], name="preprocessing"
    )
