"""The Transform's counting analyzers (`vocabulary`, `words`, `tokens`, `wordpiece_words`, `counts`): exact counts
of a column's values, then the `top_k` most frequent (`TopCounts`).

A bundle's values are counted in it (`BundleCounts`, at most FLUSH_AT distinct values held) and sent as one
{value: count} mapping per shard of the values (COUNT_SHARDS, by a hash that is the same in every worker), summed per
shard over the workers (`SumCountsFn`, CombinePerKey), then each shard's top k merged (`TopCountsFn`, at most
`top_k` entries held). Each value is in one shard with its whole count, so the merged top k is exact.
"""

from __future__ import annotations

import re
import zlib
from collections import Counter
from collections.abc import Iterator
from operator import itemgetter
from typing import Any

import apache_beam as beam
from apache_beam.transforms.window import GlobalWindows

from kflow.components.datasets.tabular.dates import any_day_first
from kflow.components.datasets.tabular.plan import WORD
from kflow.components.util.folding import FoldFn

COUNT_SHARDS = 16  # the keys of the exact counts' sum: a worker sums the shards it is given
# What TextVectorization's default standardize strips after lowercasing ASCII (tf.strings.lower's default).
_PUNCTUATION = re.compile(rb'[!"#$%&()\*\+,-\./:;<=>?@\[\\\]^_`{|}~\']')


class SumCountsFn(FoldFn):
    """The sum of {value: count} mappings: one shard's exact counts (a value's shard is `_shard(value)`)."""

    def create_accumulator(self) -> Counter:
        return Counter()

    def add_input(self, accumulator: Counter, counts: dict) -> Counter:
        accumulator.update(counts)
        return accumulator

    def merge(self, accumulator: Counter, other: Counter) -> Counter:
        accumulator.update(other)
        return accumulator

    def extract_output(self, accumulator: Counter) -> Counter:
        return accumulator


class TopCountsFn(FoldFn):
    """The `top_k` most frequent values of the shards' exact counts (each value in one shard), with how many
    distinct values there were, their total count, their UTF-8 bytes and whether any holds a space. A vocabulary's
    order: more frequent first, ties in value order (as the tabular task sorts) or, with `ties="descending"`, in
    reverse value order (as Keras' adapt sorts: numpy's lexsort, reversed). At most `top_k` entries are held."""

    def __init__(self, top_k: int | None, frequency_threshold: int = 1, ties: str = "ascending"):
        self.top_k, self.frequency_threshold = top_k, frequency_threshold
        self.descending = ties == "descending"

    def create_accumulator(self):
        return {"ranked": [], "distinct": 0, "seen": 0, "chars": 0, "spaced": False, "day_first": False}

    def add_input(self, accumulator, shard_counts):
        _, counts = shard_counts
        texts = [value for value in counts if isinstance(value, bytes)]
        accumulator["distinct"] += len(counts)
        accumulator["seen"] += sum(counts.values())
        accumulator["chars"] += sum(len(value) * counts[value] for value in texts)
        accumulator["spaced"] = accumulator["spaced"] or any(b" " in value for value in texts)
        # Whether a value is a date with its day first (31/1/2024), which the top values may not show (plan.py).
        accumulator["day_first"] = accumulator["day_first"] or any_day_first(texts)
        kept = [(value, count) for value, count in counts.items() if count >= self.frequency_threshold]
        accumulator["ranked"] = self._best(accumulator["ranked"] + kept)
        return accumulator

    def _best(self, pairs: list[tuple[Any, int]]) -> list[tuple[Any, int]]:
        pairs.sort(key=itemgetter(0), reverse=self.descending)
        pairs.sort(key=itemgetter(1), reverse=True)  # stable: equal counts keep the value order
        return pairs if self.top_k is None else pairs[: self.top_k]

    def merge(self, merged, other):
        for key in ("distinct", "seen", "chars"):
            merged[key] += other[key]
        merged["spaced"] = merged["spaced"] or other["spaced"]
        merged["day_first"] = merged["day_first"] or other["day_first"]
        merged["ranked"] = self._best(merged["ranked"] + other["ranked"])
        return merged

    def extract_output(self, accumulator):
        return {
            "ranked": [[_text(value), count] for value, count in accumulator["ranked"]],
            **{key: accumulator[key] for key in ("distinct", "seen", "chars", "spaced", "day_first")},
        }


def _text(value: Any) -> Any:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def _values(batch: dict[str, list], column: str) -> list:
    return batch[column]


def _words(batch: dict[str, list], column: str) -> list[str]:
    words: list[str] = []
    for value in batch[column]:
        words += WORD.findall(value.decode("utf-8", "replace").lower())
    return words


def _tokens(batch: dict[str, list], column: str, ngrams: int) -> list[bytes]:
    """TextVectorization's tokens (standardize lower_and_strip_punctuation, split whitespace, ngrams 1..n)."""
    tokens: list[bytes] = []
    for value in batch[column]:
        words = _PUNCTUATION.sub(b"", value.lower()).split()
        tokens += words
        for width in range(2, ngrams + 1):
            tokens += [b" ".join(words[start : start + width]) for start in range(len(words) - width + 1)]
    return tokens


def _wordpiece_words(batch: dict[str, list], column: str, lowercase: bool) -> list[bytes]:
    """keras-hub's WordPiece pretokenizer's words of a batch of texts (`learn_vocabulary`'s call, wordpiece.py)."""
    import tensorflow as tf
    from keras_hub.src.tokenizers.word_piece_tokenizer import pretokenize

    if not batch[column]:
        return []
    return pretokenize(tf.constant(batch[column]), lowercase, False, True, True).flat_values.numpy().tolist()


def _shard(value: Any) -> int:
    """A value's shard: the same in every Beam worker (Python's own hash of text differs between processes)."""
    data = (
        value
        if isinstance(value, bytes)
        else value.encode("utf-8", "surrogatepass")
        if isinstance(value, str)
        else repr(value).encode()
    )
    return zlib.crc32(data) % COUNT_SHARDS


class BundleCounts(beam.DoFn):
    """(shard, {value: count}) of the values (`values(batch, column, *extra)`: a batch's values, each as often as
    it occurs) of the batches of a bundle: counts summed in the bundle and sent as one mapping a
    shard, not an element a value (on text, most of the pass's cost was those elements). At most FLUSH_AT distinct
    values are held: past it, the sums so far are sent and counting starts again, so memory stays bounded whatever
    the data (the shard's sum, SumCountsFn, adds the partial counts up)."""

    FLUSH_AT = 250_000

    def __init__(self, values: Any, column: str, *extra: Any) -> None:
        self.values, self.column, self.extra = values, column, extra
        self.held: Counter = Counter()

    def start_bundle(self) -> None:
        self.held = Counter()

    def process(self, batch: dict[str, list]) -> Iterator[tuple[int, dict]]:
        self.held.update(self.values(batch, self.column, *self.extra))  # counted in C, not a Python loop
        if len(self.held) > self.FLUSH_AT:
            yield from self._sharded()

    def finish_bundle(self) -> Iterator[Any]:
        for pair in self._sharded():
            yield GlobalWindows.windowed_value(pair)

    def _sharded(self) -> Iterator[tuple[int, dict]]:
        shards: list[dict] = [{} for _ in range(COUNT_SHARDS)]
        for value, count in self.held.items():
            shards[_shard(value)][value] = count
        self.held = Counter()
        yield from ((shard, counts) for shard, counts in enumerate(shards) if counts)


class TopCounts(beam.PTransform):
    """Batches ({column: values}) → the `top_k` most frequent values of `column` as an analyzer of `kind` counts
    them (TopCountsFn's output), with `options` top_k, frequency_threshold, ties, ngrams (tokens) and lowercase
    (wordpiece_words)."""

    def __init__(self, kind: str, column: str, options: dict[str, Any]) -> None:
        super().__init__()
        self.kind, self.column, self.options = kind, column, options

    def expand(self, batches):
        options = self.options
        values = {"words": _words, "tokens": _tokens, "wordpiece_words": _wordpiece_words}.get(self.kind, _values)
        extra = {"tokens": (int(options.get("ngrams") or 1),), "wordpiece_words": (bool(options.get("lowercase")),)}
        top = TopCountsFn(
            options.get("top_k"), int(options.get("frequency_threshold") or 1), options.get("ties", "ascending")
        )
        return (
            batches
            | "Count" >> beam.ParDo(BundleCounts(values, self.column, *extra.get(self.kind, ())))
            | "Sum" >> beam.CombinePerKey(SumCountsFn())
            | "Top" >> beam.CombineGlobally(top)
        )
