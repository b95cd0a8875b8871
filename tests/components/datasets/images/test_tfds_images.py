"""Images from a prepared TensorFlow Datasets dataset (`data.dataset: images`, `data.source.format: tfds`), offline:
TFDS builders over scikit-learn's digits are prepared into a data_dir in the test and read back from the directory
(without the builders' code), as a user's `tfds build mnist` would leave it. The same images through TFDS and
through a folder give the same pixels; a builder whose images vary in size gets the most common one; what is no
image classification is refused in one line naming the field."""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds
import yaml

from kflow.components.datasets.images.ingest.executor import run
from kflow.components.datasets.tfds.ingest.executor import run as run_tabular_tfds
from kflow.components.util.schema import annotation_tags, load_schema
from kflow.pipeline.dsl.artifacts import Examples, Rejects, Schema
from tests.components.datasets.images.image_fixtures import write_digits

NAMES = [f"digit_{digit}" for digit in range(10)]


def digit_images():
    from sklearn.datasets import load_digits

    digits = load_digits()
    return (digits.images * 16).clip(0, 255).astype(np.uint8), digits.target


class KflowDigitsImages(tfds.core.GeneratorBasedBuilder):
    """scikit-learn's 1,797 digits as 8×8 grey images: train (the first 1,500) and test, no validation split."""

    VERSION = tfds.core.Version("1.0.0")

    def _info(self):
        features = tfds.features.FeaturesDict(
            {"image": tfds.features.Image(shape=(8, 8, 1)), "label": tfds.features.ClassLabel(names=NAMES)}
        )
        return tfds.core.DatasetInfo(builder=self, features=features, supervised_keys=("image", "label"))

    def _split_generators(self, dl_manager):
        return {"train": self._generate_examples(0, 1500), "test": self._generate_examples(1500, 1797)}

    def _generate_examples(self, start, stop):
        images, labels = digit_images()
        for index in range(start, stop):
            yield index, {"image": images[index][..., None], "label": int(labels[index])}


class KflowMixedDigitsImages(tfds.core.GeneratorBasedBuilder):
    """Digits 0, 1 and 7 as RGB images of two sizes (TFDS records no size): 2 in 3 are 12×12, the rest 16×16; a
    quarter of them train, a quarter validation, a quarter test."""

    VERSION = tfds.core.Version("1.0.0")

    def _info(self):
        features = tfds.features.FeaturesDict(
            {
                "picture": tfds.features.Image(shape=(None, None, 3)),
                "kind": tfds.features.ClassLabel(names=["0", "1", "7"]),
            }
        )
        return tfds.core.DatasetInfo(builder=self, features=features)

    def _split_generators(self, dl_manager):
        parts = {"train": 0, "validation": 2, "test": 3}
        return {split: self._generate_examples(part) for split, part in parts.items()}

    def _generate_examples(self, part):
        from PIL import Image

        images, labels = digit_images()
        chosen = [index for index in range(len(labels)) if labels[index] in (0, 1, 7)][part::4]
        for order, index in enumerate(chosen):
            side = 16 if order % 3 == 2 else 12
            image = Image.fromarray(images[index], "L").convert("RGB").resize((side, side), Image.Resampling.BILINEAR)
            yield index, {"picture": np.asarray(image), "kind": str(labels[index])}


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tfds")
    KflowDigitsImages(data_dir=str(folder)).download_and_prepare()
    KflowMixedDigitsImages(data_dir=str(folder)).download_and_prepare()
    return folder


def ingest(folder, **parameters):
    examples, schema, rejects = Examples(folder / "ex"), Schema(folder / "schema"), Rejects(folder / "rej")
    summary = run(examples=examples, schema=schema, rejects=rejects, **parameters)
    return summary, examples, load_schema(schema.file)


def records(examples) -> dict[str, list[tuple[bytes, int, str]]]:
    """{split: [(pixels, label, key)]}."""
    out = {}
    for split in examples.splits:
        rows = []
        for record in tf.data.TFRecordDataset(examples.split_files(split), compression_type="GZIP"):
            feature = tf.train.Example.FromString(record.numpy()).features.feature
            key = feature["key"].bytes_list.value[0].decode()
            rows.append((feature["image"].bytes_list.value[0], feature["label"].int64_list.value[0], key))
        out[split] = rows
    return out


def test_a_tfds_image_dataset_is_read_with_its_splits_classes_and_size_as_a_folder_of_the_same_images(
    data_dir, tmp_path, caplog
):
    with caplog.at_level(logging.INFO, logger="kflow"):
        summary, examples, schema = ingest(
            tmp_path / "tfds", source_path=str(data_dir), source_format="tfds", tfds={"name": "kflow_digits_images"}
        )
    assert (
        "kflow_digits_images's splits are train, test; data.tfds.splits not set: {'train': 'train[:90%]'" in caplog.text
    )
    assert "data.image.size not set: 8×8, the size of every image of the dataset" in caplog.text
    assert {split: summary[split] for split in ("train", "eval", "test")} == {"train": 1350, "eval": 150, "test": 297}
    assert summary["rejected"] == 0
    tags = annotation_tags(schema, "image")
    assert (tags["shape"], tags["dtype"]) == ("8,8", "uint8")
    assert json.loads(annotation_tags(schema, "label")["class_names"]) == NAMES

    read = records(examples)
    assert {key.split("#")[0] for _, _, key in read["eval"]} == {"train[90%:]"}
    images, labels = digit_images()
    assert sorted(int(key.split("#")[1]) for _, _, key in read["test"]) == list(range(297))  # its own indices
    expected = sorted((images[index].tobytes(), int(labels[index])) for index in range(1500, 1797))
    assert sorted((pixels, label) for pixels, label, _ in read["test"]) == expected

    # The same images as PNG files in class folders: the folder ingest makes the same pixels of each image.
    folder = write_digits(tmp_path / "digits", limit=1500)
    _, from_files, _ = ingest(tmp_path / "folders", source_path=str(folder), image={"size": [8, 8]})
    from_tfds = sorted(pixels for split in ("train", "eval") for pixels, _, _ in read[split])
    assert from_tfds == sorted(pixels for rows in records(from_files).values() for pixels, _, _ in rows)


def test_images_of_several_sizes_take_the_most_common_and_rgb_stays_rgb(data_dir, tmp_path, caplog):
    with caplog.at_level(logging.INFO, logger="kflow"):
        summary, examples, schema = ingest(
            tmp_path, source_path=str(data_dir), source_format="tfds", tfds={"name": "kflow_mixed_digits_images"}
        )
    assert "data.image.size not set: 12×12 (height×width), the most common size" in caplog.text
    assert annotation_tags(schema, "image")["shape"] == "12,12,3"
    assert json.loads(annotation_tags(schema, "label")["class_names"]) == ["0", "1", "7"]
    read = records(examples)
    assert {split: len(rows) for split, rows in read.items()} == {
        split: summary[split] for split in ("train", "eval", "test")
    }
    assert {len(pixels) for rows in read.values() for pixels, _, _ in rows} == {12 * 12 * 3}
    assert {key.split("#")[0] for _, _, key in read["eval"]} == {"validation"}


def test_what_is_no_image_classification_is_refused_naming_the_field(data_dir, tmp_path):
    with pytest.raises(
        ValueError, match=r"data.tfds.name: kflow_nowhere is not prepared|tfds: kflow_nowhere is not prepared"
    ):
        ingest(tmp_path / "a", source_path=str(data_dir), source_format="tfds", tfds={"name": "kflow_nowhere"})
    with pytest.raises(ValueError, match=r"data.tfds.splits.eval: 'validation' is not a split of kflow_digits_images"):
        ingest(tmp_path / "b", source_path=str(data_dir), source_format="tfds",
               tfds={"name": "kflow_digits_images", "splits": {"train": "train", "eval": "validation"}})  # fmt: skip
    with pytest.raises(
        ValueError, match=r"an image dataset, read by data.dataset: images with data.source.format: tfds"
    ):
        run_tabular_tfds(examples=Examples(tmp_path / "t" / "ex"), schema=Schema(tmp_path / "t" / "s"),
                         rejects=Rejects(tmp_path / "t" / "r"), source_path=str(data_dir),
                         tfds={"name": "kflow_digits_images"})  # fmt: skip


def test_validate_reads_the_dataset_and_refuses_a_missing_one_as_a_missing_folder(data_dir, tmp_path, run_kflow):
    config = {"name": "tfds-digits", "data": {"dataset": "images", "source": {"path": str(data_dir), "format": "tfds"},
                                              "tfds": {"name": "kflow_digits_images"}}}  # fmt: skip
    path = tmp_path / "digits.yaml"
    path.write_text(yaml.safe_dump(config))
    done = run_kflow("validate", path)
    assert done.returncode == 0 and "valid (pipeline 'tfds-digits', dataset 'images'" in done.stdout, done.stderr
    config["data"]["tfds"]["name"] = "kflow_nowhere"
    path.write_text(yaml.safe_dump(config))
    done = run_kflow("validate", path)
    assert done.returncode == 2 and "kflow_nowhere is not prepared" in done.stderr and "Traceback" not in done.stderr
    config["data"] = {"dataset": "images", "source": {"path": str(tmp_path / "nowhere")}}  # a folder: the same check
    path.write_text(yaml.safe_dump(config))
    done = run_kflow("validate", path)
    assert done.returncode == 2 and f"data.source.path: {tmp_path / 'nowhere'} does not exist" in done.stderr
