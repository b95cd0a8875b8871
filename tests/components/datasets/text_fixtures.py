"""Tiny text Examples for the text tasks' tests, in the ingest layout, with a minimal TFMD schema."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import tensorflow as tf
from google.protobuf import text_format
from tensorflow_metadata.proto.v0 import schema_pb2

from kflow.pipeline.dsl.artifacts import Examples


def text_schema(features: dict[str, str]) -> schema_pb2.Schema:
    """A minimal schema: `features` maps a name to BYTES or INT."""
    body = "".join(f'feature {{ name: "{name}" type: {kind} }}\n' for name, kind in features.items())
    return text_format.Parse(body, schema_pb2.Schema())


def write_records(examples: Examples, split: str, rows: list[dict], shards: int = 2) -> None:
    """Writes `rows` (feature name -> bytes or int) as gzipped TFRecord shards of tf.train.Example."""
    folder = examples.split_uri(split)
    folder.mkdir(parents=True, exist_ok=True)
    for shard in range(shards):
        path = folder / f"data_tfrecord-{shard:05d}-of-{shards:05d}.gz"
        with tf.io.TFRecordWriter(str(path), options="GZIP") as writer:
            for row in rows[shard::shards]:
                feature = {}
                for name, value in row.items():
                    if isinstance(value, bytes):
                        feature[name] = tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))
                    else:
                        feature[name] = tf.train.Feature(int64_list=tf.train.Int64List(value=[int(value)]))
                writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())


PHRASES = [
    "the river flows",
    "the city of london",
    "an album was released",
    "the song reached number one",
    "his team won the game",
    "the season began in march",
    "the war ended in",
    "a church was built",
    "the school has a station",
    "music for the film series",
]


def zipf_lines(count: int, seed: int) -> list[str]:
    """Lines of 6-9 fixed phrases drawn with Zipf-like frequencies, so context predicts a masked word
    ("the" is the most frequent word, about a sixth of them)."""
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, len(PHRASES) + 1)
    weights /= weights.sum()
    return [" ".join(rng.choice(PHRASES, size=int(rng.integers(6, 10)), p=weights)) + " ." for _ in range(count)]


def write_wikitext(uri: str | Path, counts: dict[str, int] | None = None) -> Examples:
    counts = counts or {"train": 300, "eval": 60, "test": 60}
    examples = Examples(uri)
    for offset, (split, count) in enumerate(counts.items()):
        write_records(examples, split, [{"text": line.encode()} for line in zipf_lines(count, seed=offset)])
    return examples


def quora_rows(count: int, seed: int, positive_rate: float = 0.1) -> list[dict]:
    """Questions whose label is learnable: insincere ones use words from a small 'insincere' list."""
    rng = np.random.default_rng(seed)
    sincere = "how what why can is does which where should do best way learn work get start good".split()
    insincere = "stupid hate idiots why are all so dumb liberals trump racist".split()
    rows = []
    for index in range(count):
        label = int(rng.random() < positive_rate)
        pool = insincere if label else sincere
        words = rng.choice(pool, size=int(rng.integers(5, 12)))
        rows.append({"qid": f"q{seed}-{index}".encode(), "text": (" ".join(words) + "?").encode(), "label": label})
    return rows


def write_quora(uri: str | Path, counts: dict[str, int] | None = None, positive_rate: float = 0.1) -> Examples:
    counts = counts or {"train": 400, "eval": 100, "test": 100}
    examples = Examples(uri)
    for offset, (split, count) in enumerate(counts.items()):
        write_records(examples, split, quora_rows(count, seed=offset, positive_rate=positive_rate))
    return examples
