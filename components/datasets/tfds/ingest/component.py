"""The TensorFlow Datasets ingest component: a prepared TFDS dataset (by name and version) into kflow's Examples."""

from __future__ import annotations

from kflow.components.ingest.ingest_spec import INGEST_OUTPUTS, ingest_parameters
from kflow.pipeline.dsl.component import Component, ComponentSpec, Parameter


class TfdsIngest(Component):
    spec = ComponentSpec(
        inputs={},
        outputs=INGEST_OUTPUTS,
        parameters=ingest_parameters(
            source_path=Parameter(
                str,
                optional=True,
                is_path=True,
                description="The TFDS data_dir (default: TFDS's, ~/tensorflow_datasets).",
            ),
            source_format=Parameter(str, default="auto", description="auto (the only one)."),
            label=Parameter(str, optional=True, description="The feature to predict (default: the supervised label)."),
            problem_type=Parameter(str, default="classification", description="classification | regression."),
            tfds=Parameter(
                dict,
                description="{name, version (null: the newest prepared), splits: {train: 'train[:90%]', eval: ..., "
                "test: ...}, download: false}",
            ),
            split=Parameter(dict, default={}, affects_output=False, description="Unused: the TFDS splits decide."),
            max_records=Parameter(int, optional=True, description="Read at most this many records of each split."),
        ),
        executor="kflow.components.datasets.tfds.ingest.executor:run",
        renamed_parameters={"task": "problem_type"},
        source_files="kflow.components.datasets.tfds.ingest.executor:source_files",
    )
