"""The Quora Insincere Questions ingest component: the competition CSV in, stratified TFRecord Examples out.

Reads `qid,question_text,target` from a CSV file (or a folder holding train.csv or
train_sample.csv), or from Kaggle through kagglehub (source_format: kaggle, needs
credentials). Writes `qid`, `text` and `label` (0/1) to the splits of `split` (by default
bundle.SPLIT_WITH_TEST: the CSV has no labelled test split), stratified by label and assigned by a hash
of the qid. Every refused row goes to `rejects`. A CSV of questions to score (`qid,question_text`, the
competition's test.csv) is written without a label to the one split `split` names (`kflow predict`).
"""

from __future__ import annotations

from kflow.components.datasets.bundle import SPLIT_WITH_TEST
from kflow.components.ingest.ingest_spec import ingest_component_spec, split_shares
from kflow.pipeline.dsl.component import Component, Parameter


class QuoraIngest(Component):
    # kflow predict reads data to score with this source_format: a CSV without the target column (test.csv).
    score_format = "csv"
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

    def check_parameters(self) -> list[str]:
        """What the ingest would refuse before reading a row, for `kflow validate`: no CSV found, a header that is
        neither the training file's nor the test file's, or questions without a target given to train on."""
        from kflow.components.datasets.quora.ingest.executor import labelled_header, resolve, unlabelled_training

        source_format, source_path = self.parameters.get("source_format", "auto"), self.parameters.get("source_path")
        if source_format == "kaggle" or source_path is None or "://" in str(source_path):
            return []  # downloaded, looked up where the run happens, or remote: the run finds it or says why
        try:
            path = resolve(source_path, source_format)
            labelled = labelled_header(path)
        except (ValueError, OSError) as error:
            return [str(error)]
        split = self.parameters.get("split")
        if not labelled and (split is None or len(split) != 1):
            return [unlabelled_training(path)]
        return []
