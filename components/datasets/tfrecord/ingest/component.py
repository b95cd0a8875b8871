"""The TFRecord ingest component (ImportExampleGen-like): existing tf.train.Example files into kflow's Examples."""

from __future__ import annotations

from kflow.components.ingest.ingest_spec import INGEST_OUTPUTS, ingest_parameters
from kflow.pipeline.dsl.component import Component, ComponentSpec, Parameter


class TfRecordIngest(Component):
    spec = ComponentSpec(
        inputs={},
        outputs=INGEST_OUTPUTS,
        parameters=ingest_parameters(
            source_path=Parameter(
                str, is_path=True, description="A TFRecord file (plain or gzipped), a folder of them, or a glob."
            ),
            source_format=Parameter(str, default="auto", description="auto | tfrecord (the same)."),
            label=Parameter(
                str,
                optional=True,
                description="The feature to predict; null: data to score (`kflow predict`): no label, every record "
                "kept, each keyed by its key feature or its `FILE#INDEX` (the `__source_row__` feature).",
            ),
            problem_type=Parameter(str, default="classification", description="classification | regression."),
            key=Parameter(str, optional=True, description="A feature with a unique record key; repeats are rejected."),
            split_files=Parameter(
                dict,
                optional=True,
                description="{split: glob on file names}: whole files per split (the source's own split); "
                "else `split` shares by a hash of the key.",
            ),
            infer_records=Parameter(int, default=1000, description="Examples read to learn the feature types."),
            split=Parameter(
                dict,
                default={"train": 8, "eval": 1, "test": 1},
                description="Shares of the records per split (per label for classification).",
            ),
            max_records=Parameter(int, optional=True, description="Read at most this many records."),
        ),
        executor="kflow.components.datasets.tfrecord.ingest.executor:run",
        renamed_parameters={"task": "problem_type"},
        source_files="kflow.components.datasets.tfrecord.ingest.executor:source_files",
    )
