"""The Quora Insincere Questions ingest component: the competition CSV in, stratified TFRecord Examples out.

Reads `qid,question_text,target` from a CSV file (or a folder holding train.csv or
train_sample.csv), or from Kaggle through kagglehub (source_format: kaggle, needs
credentials). Writes `qid`, `text` and `label` (0/1) to the splits of `split` (by default
bundle.SPLIT_WITH_TEST: the CSV has no labelled test split), stratified by label and assigned by a hash
of the qid. Every refused row goes to `rejects`.
"""

from __future__ import annotations

from kflow.components.datasets.bundle import SPLIT_WITH_TEST
from kflow.components.ingest.ingest_spec import ingest_component_spec, split_shares
from kflow.pipeline.dsl.component import Component, Parameter


class QuoraIngest(Component):
    spec = ingest_component_spec(
        "quora",
        source="The competition's train CSV, or a folder holding train.csv.",
        source_optional=True,
        formats="auto | csv | kaggle. auto: source_path, $KFLOW_DATA_DIR, then the caches; never "
        "downloads. kaggle: kagglehub's competition download.",
        split=split_shares(
            SPLIT_WITH_TEST, "Shares of each label's records per split; must include train, eval and test."
        ),
        records="CSV rows",
        filters={"max_chars": Parameter(int, default=1000, description="Reject questions longer than this.")},
        source_files="kflow.components.datasets.quora.ingest.executor:source_files",
    )
