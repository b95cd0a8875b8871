"""The TensorFlow Datasets ingest component: a prepared TFDS dataset (by name and version) into kflow's Examples."""

from __future__ import annotations

from kflow.components.datasets.tabular.table_spec import label_parameters, table_ingest_spec
from kflow.pipeline.dsl.component import Component, Parameter

_READING = label_parameters(
    thing="feature",
    position=None,
    problem_type="classification",
    key_hashes=None,
    tfds=Parameter(
        dict,
        description="{name, version (null: the newest prepared), splits: {train: 'train[:90%]', eval: ..., "
        "test: ...}, download: false}",
    ),
)
# The task, unless given, from the label's feature type (nothing is read before the ingest): a float label was
# classification unless set, a class a price.
_READING["problem_type"] = Parameter(
    str,
    optional=True,
    description="classification | regression; unset: regression for a float label, else classification.",
)


class TfdsIngest(Component):
    spec = table_ingest_spec(
        "tfds",
        source="The TFDS data_dir (default: TFDS's, ~/tensorflow_datasets).",
        source_optional=True,
        formats="auto (the only one).",
        reading=_READING,
        split=Parameter(dict, default={}, affects_output=False, description="Unused: the TFDS splits decide."),
        records="records of each split",
        source_files="kflow.components.ingest.tfds_source:source_files",
    )
