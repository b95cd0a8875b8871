"""The TFDS ingest, offline: a builder that reads scikit-learn's iris file is prepared into a local data_dir in
the test; the ingest reads it back from the directory (without the builder's code) for the tabular task."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow_datasets as tfds

from kflow.components.datasets.tfds.ingest.executor import run
from kflow.components.util.schema import annotation_tags, load_schema
from kflow.pipeline.dsl.artifacts import Examples, Rejects, Schema
from tests.components.datasets.tabular_fixtures import IRIS_COLUMNS, iris_rows

SPECIES = ["setosa", "versicolor", "virginica"]


class KflowIrisLocal(tfds.core.GeneratorBasedBuilder):
    """Iris from the file scikit-learn ships: no download."""

    VERSION = tfds.core.Version("1.0.0")

    def _info(self):
        measures = {name: tfds.features.Scalar(np.float32) for name in IRIS_COLUMNS[:4]}
        features = tfds.features.FeaturesDict({**measures, "species": tfds.features.ClassLabel(names=SPECIES)})
        return tfds.core.DatasetInfo(builder=self, features=features, supervised_keys=("petal_length", "species"))

    def _split_generators(self, dl_manager):
        rows = iris_rows()
        return {"train": self._generate_examples(rows[::2] + rows[1::4]), "test": self._generate_examples(rows[3::4])}

    def _generate_examples(self, rows):
        for index, row in enumerate(rows):
            yield (
                index,
                {
                    **{name: float(value) for name, value in zip(IRIS_COLUMNS[:4], row[:4], strict=True)},
                    "species": row[4],
                },
            )


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tfds")
    KflowIrisLocal(data_dir=str(folder)).download_and_prepare()
    return folder


def ingest(root, data_dir, **options):
    examples, schema = Examples(root / "ex"), Schema(root / "schema")
    splits = {"train": "train[:90%]", "eval": "train[90%:]", "test": "test"}
    summary = run(examples=examples, schema=schema, rejects=Rejects(root / "rej"), source_path=str(data_dir),
                  tfds={"name": "kflow_iris_local", "splits": splits, **options})  # fmt: skip
    return summary, examples, schema


def test_a_prepared_dataset_is_ingested_offline_for_the_tabular_task(data_dir, tmp_path):
    summary, examples, schema = ingest(tmp_path, data_dir)
    assert summary["train"] + summary["eval"] == 113 and summary["test"] == 37  # the builder's train and test
    assert 100 <= summary["train"] <= 102  # 90 % of 113, however TFDS rounds
    assert summary["rejected"] == 0
    proto = load_schema(schema.file)
    assert annotation_tags(proto, "species")["role"] == "label"  # The builder's supervised label.
    assert annotation_tags(proto, "species")["kflow_type"] == "string"  # ClassLabel → class names.
    from tensorflow_metadata.proto.v0 import schema_pb2

    from kflow.components.datasets.tabular.task import TabularTask

    task = TabularTask(proto)
    task.prepare(examples, tmp_path / "assets")
    assert task.classes == SPECIES  # The class names, as the tabular task trains on them.
    floats = sorted(feature.name for feature in proto.feature if feature.type == schema_pb2.FLOAT)
    assert floats == ["petal_length", "petal_width", "sepal_length", "sepal_width"]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"name": "not_prepared"}, "not_prepared is not prepared under"),
        ({"version": "9.9.9"}, "kflow_iris_local/9.9.9 is not prepared"),
        ({"splits": {"train": "train", "eval": "validation"}}, "data.tfds.splits.eval: 'validation' is not a split"),
        ({"colour": 1}, r"data.tfds: unknown options \['colour'\]"),
    ],
)
def test_bad_options_are_refused(data_dir, tmp_path, options, message):
    with pytest.raises(ValueError, match=message):
        ingest(tmp_path, data_dir, **options)
