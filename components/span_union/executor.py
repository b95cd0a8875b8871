"""SpanUnion's executor: links each span's shards into one Examples artifact and records its spans.

The shards are hard links where the file system allows (published artifacts are never written again), copies
otherwise, rewritten where a span holds a column as another type than the union's schema (merged_schema.py); they
are renumbered `data_tfrecord-<i>-of-<n>.gz` in span order, so a record's position names its span. `stats.json`
sums the spans' counts and keeps each span's own (`span_counts`) and the list of spans (`spans`, span numbers as
strings), and `metadata.json` the artifact's properties, `{"spans": [...]}`: what run records, `kflow plan`,
`kflow runs` and the report show.
"""

from __future__ import annotations

import gzip
import logging
import os
import shutil
from collections import Counter
from typing import Any

from google.protobuf import text_format

from kflow.components.ingest.tfrecord_file import TFRecordWriter, read_records
from kflow.components.span_union.merged_schema import mark_partial, merged_schema, widened_record, widenings
from kflow.components.util.schema import load_schema
from kflow.pipeline.dsl.artifacts import Examples, Schema

log = logging.getLogger(__name__)


def run(*, examples: Examples, schema: Schema, spans: list[str], **inputs: Examples | Schema) -> dict[str, Any]:
    """Writes the union of the `span_<i>` inputs (their schemas `span_<i>_schema`); returns {"spans": "1,2",
    "<split>_examples": n}."""
    sources = [inputs[f"span_{index}"] for index in range(len(spans))]
    schemas = [load_schema(inputs[f"span_{index}_schema"].file) for index in range(len(spans))]
    union_schema, changes = merged_schema(schemas)
    mark_partial(union_schema, schemas, spans)
    for said in widenings(schemas, spans):
        log.info("ingest: %s", said)
    splits = sorted({split for source in sources for split in source.splits})
    accepted: Counter = Counter()
    rejected: Counter = Counter()
    read = 0
    span_counts = {}
    for span, source in zip(spans, sources, strict=True):
        stats = source.stats
        read += stats.get("read", 0)
        accepted.update(stats.get("accepted", {}))
        rejected.update(stats.get("rejected", {}))
        span_counts[span] = stats.get("accepted", {})
    for split in splits:
        shards = [(changed, path) for changed, source in zip(changes, sources, strict=True)
                  for path in (source.split_files(split) if split in source.splits else [])]  # fmt: skip
        folder = examples.split_uri(split)
        folder.mkdir(parents=True, exist_ok=True)
        for index, (changed, path) in enumerate(shards):
            target = folder / f"data_tfrecord-{index:05d}-of-{len(shards):05d}.gz"
            _rewrite(path, target, changed) if changed else _link(path, target)
    summary = {
        "read": read,
        "accepted": dict(accepted),
        "rejected": dict(rejected),
        "spans": list(spans),
        "span_counts": span_counts,
    }
    examples.write_json("stats.json", summary)
    examples.set_metadata(spans=list(spans))  # the Examples' properties: which spans they hold
    schema.path.mkdir(parents=True, exist_ok=True)
    schema.file.write_text(text_format.MessageToString(union_schema))
    log.info("ingest: spans %s: %s", ", ".join(spans), ", ".join(f"{k}={v}" for k, v in sorted(accepted.items())))
    return {"spans": ",".join(spans), **{f"{split}_examples": accepted.get(split, 0) for split in splits}}


def _rewrite(source: str, target: os.PathLike, changes: dict[str, str]) -> None:
    """The shard's records with the columns of `changes` held as the union's types."""
    with gzip.open(source, "rb") as stream, TFRecordWriter(target) as writer:
        for _offset, record in read_records(stream):
            if record is None:
                raise ValueError(f"{source}: a broken record")
            writer.write(widened_record(record, changes))


def _link(source: str, target: os.PathLike) -> None:
    try:
        os.link(source, target)
    except OSError:  # another file system, or one without hard links
        shutil.copyfile(source, target)
