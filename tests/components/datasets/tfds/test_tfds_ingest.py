"""The TFDS ingest, offline: a builder that reads scikit-learn's iris file is prepared into a local data_dir in
the test; the ingest reads it back from the directory (without the builder's code) for the tabular task."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf
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
    """The ingest of `options` (data.tfds); splits None: left to the dataset's own (tfds_source.default_splits)."""
    examples, schema = Examples(root / "ex"), Schema(root / "schema")
    tfds_options = {
        "name": "kflow_iris_local",
        "splits": {"train": "train[:90%]", "eval": "train[90%:]", "test": "test"},
    }
    tfds_options.update(options)
    if tfds_options["splits"] is None:
        del tfds_options["splits"]
    summary = run(examples=examples, schema=schema, rejects=Rejects(root / "rej"), source_path=str(data_dir),
                  tfds=tfds_options)  # fmt: skip
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


def test_a_float_label_is_a_regression_unless_the_task_is_set(data_dir, tmp_path):
    """A float label (iris's petal length) was classification unless data.problem_type said otherwise: a class a
    length. Now it is a regression, and the class label a classification, as a CSV's would be."""
    splits = {"train": "train[:90%]", "eval": "train[90%:]", "test": "test"}
    tfds_options = {"name": "kflow_iris_local", "splits": splits}

    def task(root, **parameters):
        schema = Schema(root / "schema")
        run(examples=Examples(root / "ex"), schema=schema, rejects=Rejects(root / "rej"), source_path=str(data_dir),
            tfds=tfds_options, **parameters)  # fmt: skip
        label = parameters.get("label", "species")
        return annotation_tags(load_schema(schema.file), label)["task"]

    assert task(tmp_path / "length", label="petal_length") == "regression"
    assert task(tmp_path / "species") == "classification"  # the builder's supervised ClassLabel
    assert task(tmp_path / "set", label="petal_length", problem_type="classification") == "classification"


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


class KflowIrisAsCatalogued(tfds.core.GeneratorBasedBuilder):
    """Iris as TFDS's catalogue has it: the four measures in one `features` vector, a `label`, a train split alone."""

    VERSION = tfds.core.Version("1.0.0")

    def _info(self):
        features = tfds.features.FeaturesDict(
            {
                "features": tfds.features.Tensor(shape=(4,), dtype=np.float32),
                "label": tfds.features.ClassLabel(names=SPECIES),
            }
        )
        return tfds.core.DatasetInfo(builder=self, features=features, supervised_keys=("features", "label"))

    def _split_generators(self, dl_manager):
        return {"train": self._generate_examples()}

    def _generate_examples(self):
        for index, row in enumerate(iris_rows()):
            yield index, {"features": np.asarray(row[:4], np.float32), "label": row[4]}


class KflowWineNested(tfds.core.GeneratorBasedBuilder):
    """scikit-learn's wine as TFDS's titanic is laid out: the columns in a nested `features` dict (a ClassLabel and
    a text among them), the label beside it; train and test."""

    VERSION = tfds.core.Version("1.0.0")

    def _info(self):
        inner = {name: tfds.features.Scalar(np.float32) for name in ("alcohol", "malic_acid", "color_intensity", "hue")}
        inner["strong"] = tfds.features.ClassLabel(names=["no", "yes"])
        inner["note"] = tfds.features.Text()
        features = {"features": tfds.features.FeaturesDict(inner), "cultivar": tfds.features.ClassLabel(num_classes=3)}
        return tfds.core.DatasetInfo(
            builder=self, features=tfds.features.FeaturesDict(features), supervised_keys=("features", "cultivar")
        )

    def _split_generators(self, dl_manager):
        return {"train": self._generate_examples(0), "test": self._generate_examples(1)}

    def _generate_examples(self, part):
        from sklearn.datasets import load_wine

        wine = load_wine()
        for index in range(part, len(wine.target), 2):
            values = dict(zip(wine.feature_names, wine.data[index], strict=True))
            measures = {name: float(values[name]) for name in ("alcohol", "malic_acid", "color_intensity", "hue")}
            note = f"a wine of {values['alcohol']:.1f} degrees"
            inner = {**measures, "strong": int(values["alcohol"] > 13), "note": note}
            yield index, {"features": inner, "cultivar": int(wine.target[index])}


def test_datasets_as_catalogued_a_vector_and_a_nested_dict_become_columns(tmp_path):
    """TFDS's iris (one `features` vector, train alone) and titanic's layout (a nested dict): each value a column,
    named by its own name; the splits the dataset lacks cut from train; the values are the source's."""
    data_dir = tmp_path / "tfds"
    KflowIrisAsCatalogued(data_dir=str(data_dir)).download_and_prepare()
    KflowWineNested(data_dir=str(data_dir)).download_and_prepare()

    summary, examples, schema = ingest(tmp_path / "iris", data_dir, name="kflow_iris_as_catalogued", splits=None)
    assert (summary["train"], summary["eval"], summary["test"]) == (120, 15, 15)  # 80 %, 10 %, 10 % of train
    proto = load_schema(schema.file)
    assert sorted(feature.name for feature in proto.feature) == [
        "features_0",
        "features_1",
        "features_2",
        "features_3",
        "label",
    ]
    records = [
        tf.train.Example.FromString(record.numpy()).features.feature
        for split in examples.splits
        for record in tf.data.TFRecordDataset(examples.split_files(split), compression_type="GZIP")
    ]
    sepal_lengths = sorted(round(record["features_0"].float_list.value[0], 4) for record in records)
    assert sepal_lengths == sorted(round(float(row[0]), 4) for row in iris_rows())
    assert {record["label"].bytes_list.value[0].decode() for record in records} == set(SPECIES)

    summary, _, schema = ingest(tmp_path / "wine", data_dir, name="kflow_wine_nested", splits=None)
    assert (summary["train"] + summary["eval"], summary["test"]) == (89, 89)  # eval cut from train; its test
    proto = load_schema(schema.file)
    names = {feature.name for feature in proto.feature}
    assert names == {"alcohol", "malic_acid", "color_intensity", "hue", "strong", "note", "cultivar"}
    assert annotation_tags(proto, "cultivar")["role"] == "label"
