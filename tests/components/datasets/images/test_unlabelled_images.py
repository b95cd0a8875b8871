"""Images to score (`kflow predict` of an image model): every file under a folder, in any sub-folders, without
classes, each keyed by its path and made the size and channels the model was trained on; what is no image is
refused with its path, as in training; the image task reads the Examples' pixels without a label."""

from __future__ import annotations

import json

import numpy as np
import pytest
import tensorflow as tf
from PIL import Image

from kflow.components.datasets.images.ingest.executor import run
from kflow.components.datasets.images.ingest.source import UNLABELLED
from kflow.components.datasets.images.task import ImagesTask
from kflow.components.util.schema import annotation_tags, load_schema
from kflow.pipeline.dsl.artifacts import Examples, Rejects, Schema
from tests.components.datasets.images.image_fixtures import write_digits


@pytest.fixture
def new_images(tmp_path):
    """30 digits in two levels of folders (whose names are no classes), one 16×16 RGB JPEG, one text file."""
    root = write_digits(tmp_path / "incoming" / "batch-1", limit=30).parent
    Image.open(root / "batch-1" / "3" / "0003.png").convert("RGB").resize((16, 16)).save(root / "camera.jpg")
    (root / "batch-1" / "README.png").write_text("not an image")
    return root


def test_images_to_score_are_keyed_by_path_made_the_models_size_and_read_without_a_label(new_images, tmp_path):
    examples, schema, rejects = Examples(tmp_path / "ex"), Schema(tmp_path / "schema"), Rejects(tmp_path / "rej")
    summary = run(
        examples=examples, schema=schema, rejects=rejects, source_path=str(new_images), source_format=UNLABELLED,
        image={"size": [8, 8], "channels": 1}, split={"score": 1}, max_invalid_fraction=0.1,
    )  # fmt: skip
    assert (summary["read"], summary["score"], summary["rejected"]) == (32, 31, 1)
    (reject,) = [json.loads(line) for line in rejects.file.read_text().splitlines()]
    assert (reject["reason"], reject["position"]) == ("not_an_image", "batch-1/README.png")

    scored = load_schema(schema.file)
    assert [feature.name for feature in scored.feature] == ["image", "key"]
    assert annotation_tags(scored, "key")["role"] == "key" and annotation_tags(scored, "image")["shape"] == "8,8"

    serialized = [record.numpy() for record in tf.data.TFRecordDataset(examples.split_files("score"), "GZIP")]
    keys = [
        tf.train.Example.FromString(record).features.feature["key"].bytes_list.value[0].decode()
        for record in serialized
    ]
    assert sorted(keys) == sorted(["camera.jpg", *(f"batch-1/{d}/{i:04d}.png" for i, d in enumerate(digits_of(30)))])

    # The trained task (its schema: the labelled one) reads the pixels of records that have no label.
    task = ImagesTask(load_schema(_labelled_schema(tmp_path)), "image_convnet")
    images = task.inputs(tf.constant(serialized)).numpy()
    assert images.shape == (31, 8, 8) and images.dtype == np.uint8
    first = keys.index("batch-1/0/0000.png")
    assert images[first].tobytes() == (np.asarray(Image.open(new_images / "batch-1" / "0" / "0000.png"))).tobytes()


def digits_of(count: int) -> list[int]:
    from sklearn.datasets import load_digits

    return [int(label) for label in load_digits().target[:count]]


def _labelled_schema(tmp_path):
    from kflow.components.datasets.images.ingest.executor import image_schema

    path = tmp_path / "trained.pbtxt"
    path.write_text(image_schema((8, 8), [str(digit) for digit in range(10)]))
    return path


def test_scoring_images_takes_the_configs_invalid_fraction_and_beam_options_as_a_tables_scoring_does(
    new_images, tmp_path
):
    """`kflow predict` of an image model reads the folder with the config's ingest settings (from the file or --set):
    one text file among 32 is more than the default 1% allows, and the refusal names the fraction in force; raised,
    the 31 images are scored. An MNIST config's settings are taken alike."""
    import yaml

    from kflow.pipeline.app.config_loading import default_split
    from kflow.pipeline.app.image_scoring import image_scoring_ingest
    from kflow.pipeline.app.predict import DataRefused, _ingest
    from kflow.pipeline.dsl.config import load_config

    data = {"dataset": "images", "source": {"path": "digits"}, "image": {"fit": "pad"}}
    path = tmp_path / "images.yaml"
    path.write_text(yaml.safe_dump({"name": "images", "data": data, "beam": {"options": {"direct_num_workers": 1}}}))

    def scoring(*overrides, config=path):
        return image_scoring_ingest(load_config(config, overrides, default_split), (8, 8), str(new_images))

    with pytest.raises(DataRefused, match=r"more than data\.filters\.max_invalid_fraction=0\.01 allows"):
        _ingest(scoring(), tmp_path / "default")
    with pytest.raises(DataRefused, match=r"more than data\.filters\.max_invalid_fraction=0\.02 allows"):
        _ingest(scoring("data.filters.max_invalid_fraction=0.02"), tmp_path / "set")

    node = scoring("data.filters.max_invalid_fraction=0.5")
    assert node.parameters["image"] == {"fit": "pad", "size": [8, 8], "channels": 1}
    assert node.parameters["beam_args"] == ["--direct_num_workers=1"]
    summary = _ingest(node, tmp_path / "raised")
    assert (summary["read"], summary["score"], summary["rejected"]) == (32, 31, 1)

    mnist = tmp_path / "mnist.yaml"
    mnist.write_text(
        yaml.safe_dump({"name": "mnist", "data": {"dataset": "mnist", "filters": {"max_invalid_fraction": 0.3}}})
    )
    parameters = scoring(config=mnist).parameters
    assert (parameters["max_invalid_fraction"], parameters["source_path"], parameters["split"]) == (
        0.3, str(new_images), {"score": 1},
    )  # fmt: skip
