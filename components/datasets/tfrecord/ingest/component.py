"""The TFRecord ingest component (ImportExampleGen-like): existing tf.train.Example files into kflow's Examples."""

from __future__ import annotations

from kflow.components.datasets.tabular.table_spec import (
    INFERRED_PROBLEM_TYPE,
    InspectedTableIngest,
    label_parameters,
    table_ingest_spec,
)
from kflow.pipeline.dsl.component import Parameter


class TfRecordIngest(InspectedTableIngest):
    spec = table_ingest_spec(
        "tfrecord",
        source="A TFRecord file (plain or gzipped), a folder of them, or a glob.",
        reading=label_parameters(
            thing="feature",
            position="FILE#INDEX",
            problem_type=INFERRED_PROBLEM_TYPE,
            split_files=Parameter(
                dict,
                optional=True,
                description="{split: glob on file names}: whole files per split (the source's own split); "
                "else `split` shares by a hash of the key.",
            ),
            infer_records=Parameter(int, default=1000, description="Examples read to learn the feature types."),
        ),
        source_files="kflow.components.datasets.tfrecord.ingest.executor:source_files",
    )
    inspect = "kflow.components.datasets.tfrecord.ingest.inspect:inspect_source"
