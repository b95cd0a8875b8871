"""Fixtures for the WikiText-2 ingest tests: a small corpus written on the fly and an executor harness."""

from __future__ import annotations

from pathlib import Path

import tensorflow as tf

from kflow.components.datasets.wikitext2.ingest.executor import run
from kflow.components.util.schema import feature_spec, load_schema
from kflow.pipeline.dsl.artifacts import Examples, Rejects, Schema

LONG = (
    "The quick brown fox jumps over the lazy dog , and then it runs far away into the forest , where nobody sees it . "
)


def write_corpus(folder: Path, train: list[bytes], valid: list[bytes], test: list[bytes], names=None) -> Path:
    names = names or {"train": "train.txt", "valid": "valid.txt", "test": "test.txt"}
    folder.mkdir(parents=True, exist_ok=True)
    for split, lines in (("train", train), ("valid", valid), ("test", test)):
        (folder / names[split]).write_bytes(b"".join(line + b"\n" for line in lines))
    return folder


def ingest(tmp_path: Path, **parameters) -> tuple[dict, Examples, Rejects, Schema]:
    examples, schema, rejects = (
        Examples(tmp_path / "examples"),
        Schema(tmp_path / "schema"),
        Rejects(tmp_path / "rejects"),
    )
    summary = run(examples=examples, schema=schema, rejects=rejects, **parameters)
    return summary, examples, rejects, schema


def read_split(examples: Examples, schema: Schema, split: str) -> list[dict]:
    files = sorted(str(path) for path in examples.split_uri(split).glob("*.gz"))
    spec = feature_spec(load_schema(schema.file))
    records = []
    for serialized in tf.data.TFRecordDataset(files, compression_type="GZIP"):
        parsed = tf.io.parse_single_example(serialized, spec)
        records.append({name: value.numpy() for name, value in parsed.items()})
    return records
