"""The WikiText-2 ingest component: the corpus's lines in, filtered and split TFRecord Examples out.

Reads `train.txt/valid.txt/test.txt`, the official `wiki.{train,valid,test}.tokens`
(or `.raw`) files, or the Keras download; keeps the lines the filters allow (by default,
as the Keras MLM guide: longer than 100 characters; no headings, no blank lines) and
writes them with a `text` feature to the splits train/eval/test (the source's
train/valid/test). Every other line goes to `rejects`: "filtered" (policy) or "invalid".
Given the one split `score` (kflow predict), it reads text files of any layout, a record a non-blank line.
"""

from __future__ import annotations

from kflow.components.ingest.ingest_spec import ingest_component_spec
from kflow.pipeline.dsl.component import Component, Parameter


class WikiText2Ingest(Component):
    # kflow predict reads text to score (every line of a text file, a folder's or a glob's) with this source_format.
    score_format = "auto"
    keys_by_place = True  # each line scored is keyed FILE:LINE
    spec = ingest_component_spec(
        "wikitext2",
        source="A folder with train.txt/valid.txt/test.txt or wiki.{train,valid,test}.tokens|.raw "
        "(or a wikitext-2*/ folder holding them).",
        source_optional=True,
        formats="auto | download. auto: source_path, $KFLOW_DATA_DIR, then the caches; never downloads.",
        split=Parameter(
            dict,
            optional=True,
            description="Only {train, eval} keys are accepted (the source's own splits are used); one other "
            "split alone (e.g. {score: 1}) reads text to score, every line of source_path's text files.",
        ),
        records="lines of each file",
        filters={
            "min_chars": Parameter(int, default=101, description="Keep lines of at least this many characters."),
            "max_chars": Parameter(int, optional=True, description="Drop lines longer than this."),
            "drop_headings": Parameter(bool, default=True, description="Drop '= Title =' heading lines."),
            "drop_blank": Parameter(bool, default=True, description="Drop blank lines."),
            "deduplicate": Parameter(bool, default=False, description="Drop exact repeats of an earlier line."),
        },
        source_files="kflow.components.datasets.wikitext2.ingest.executor:source_files",
    )
