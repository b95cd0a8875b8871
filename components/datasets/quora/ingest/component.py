"""The Quora Insincere Questions ingest component: the competition CSV in, stratified TFRecord Examples out.

Reads `qid,question_text,target` from a CSV file (or a folder holding train.csv or
train_sample.csv), or from Kaggle through kagglehub (source_format: kaggle, needs
credentials). Writes `qid`, `text` and `label` (0/1) to the splits of `split`
({"train": 8, "eval": 1, "test": 1}: the CSV has no labelled test split), stratified
by label and assigned by a hash of the qid. Every refused row goes to `rejects`.
"""

from __future__ import annotations

from kflow.components.ingest.ingest_spec import INGEST_OUTPUTS, ingest_parameters
from kflow.pipeline.dsl.component import Component, ComponentSpec, Parameter


class QuoraIngest(Component):
    spec = ComponentSpec(
        inputs={},
        outputs=INGEST_OUTPUTS,
        parameters=ingest_parameters(
            source_path=Parameter(
                str,
                optional=True,
                is_path=True,
                description="The competition's train CSV, or a folder holding train.csv.",
            ),
            source_format=Parameter(
                str,
                default="auto",
                description="auto | csv | kaggle. auto: source_path, $KFLOW_DATA_DIR, then the caches; never "
                "downloads. kaggle: kagglehub's competition download.",
            ),
            split=Parameter(
                dict,
                default={"train": 8, "eval": 1, "test": 1},
                description="Shares of each label's records per split; must include train, eval and test.",
            ),
            max_records=Parameter(int, optional=True, description="Read at most this many CSV rows."),
            max_chars=Parameter(int, default=1000, description="Reject questions longer than this."),
        ),
        executor="kflow.components.datasets.quora.ingest.executor:run",
        source_files="kflow.components.datasets.quora.ingest.executor:source_files",
    )
