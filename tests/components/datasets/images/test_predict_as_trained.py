"""`kflow predict` of an image model makes new images as the model's training images were made: their size and
channels (the model's input), and how they were fitted to it (data.image's fit, background, convert), which the images
ingest records in its schema's `image` tags and the model carries (assets/schema.pbtxt). Before, fit, background and
convert were the config's at predict time: a model trained on padded images scored a wide image stretched (a user
trial: score 0.859 stretched, 0.557 padded), without a word. Real pixels: scikit-learn's digits as PNG files."""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest
import tensorflow as tf
import yaml
from PIL import Image

from kflow.components.datasets.images.ingest.executor import ImageConverter, image_schema, run
from kflow.components.datasets.images.ingest.image_format import ImageFormat
from kflow.components.datasets.images.ingest.source import UNLABELLED, ImageFile
from kflow.components.util.schema import annotation_tags, load_schema
from kflow.pipeline.dsl.artifacts import Examples, Rejects, Schema
from tests.components.datasets.images.image_fixtures import write_two_size_digits

PADDED = {"size": [12, 12], "channels": 1, "fit": "pad"}
MADE = "size 12×12, channels 1, fit pad, background white, convert true"


@pytest.fixture(scope="module")
def digits(tmp_path_factory):
    """120 digits (0, 1, 7): 81 as 12×12 PNGs, 39 as 16×16 JPEGs."""
    return write_two_size_digits(tmp_path_factory.mktemp("images") / "digits")


@pytest.fixture
def new_images(tmp_path):
    """A digit stretched wide (24×12, not square, as a cropped scan) and one of the training's square size."""
    from sklearn.datasets import load_digits

    folder = tmp_path / "new"
    folder.mkdir()
    pixels = (load_digits().images[7] * 16).clip(0, 255).astype(np.uint8)
    Image.fromarray(pixels, "L").resize((24, 12), Image.Resampling.BILINEAR).save(folder / "wide.png")
    Image.fromarray(pixels, "L").resize((12, 12), Image.Resampling.BILINEAR).save(folder / "square.png")
    return folder


def made(path, fit: str) -> bytes:
    """The image's pixels as the images ingest makes them 12×12 grey with `fit`."""
    converter = ImageConverter(ImageFormat(12, 12, 1, fit), 1, {})
    pixels, problem = converter.pixels(ImageFile(str(path), None, path.name))
    assert problem is None, problem
    return pixels


def scored_pixels(examples: Examples) -> dict[str, bytes]:
    records = tf.data.TFRecordDataset(examples.split_files("score"), compression_type="GZIP")
    features = [tf.train.Example.FromString(record.numpy()).features.feature for record in records]
    return {f["key"].bytes_list.value[0].decode(): f["image"].bytes_list.value[0] for f in features}


def test_the_ingest_records_how_its_images_were_made_and_scoring_makes_new_ones_so(
    digits, new_images, tmp_path, caplog
):
    from kflow.pipeline.app.config_loading import default_split
    from kflow.pipeline.app.image_scoring import image_scoring_ingest
    from kflow.pipeline.app.predict import _ingest
    from kflow.pipeline.dsl.config import load_config

    schema = Schema(tmp_path / "schema")
    run(examples=Examples(tmp_path / "ex"), schema=schema, rejects=Rejects(tmp_path / "rej"),
        source_path=str(digits), image=PADDED, max_invalid_fraction=0.0)  # fmt: skip
    trained = load_schema(schema.file)
    tags = annotation_tags(trained, "image")
    assert (tags["shape"], tags["fit"], tags["background"], tags["convert"]) == ("12,12", "pad", "white", "true")

    path = tmp_path / "images.yaml"
    data = {"dataset": "images", "source": {"path": str(digits)}, "image": {"fit": "resize", "size": 28}}
    path.write_text(yaml.safe_dump({"name": "images", "data": data}))
    config = load_config(path, [], default_split)
    with caplog.at_level(logging.INFO, logger="kflow"):
        node = image_scoring_ingest(config, (12, 12), str(new_images), "score", trained)
    assert node.parameters["image"] == {**PADDED, "background": "white", "convert": True}
    assert node.parameters["source_format"] == UNLABELLED
    (warning,) = [record.getMessage() for record in caplog.records if record.name == "kflow.predict"]
    assert warning == (
        f"predict: images made as the model's training images were ({MADE}), not as data.image asks (size 28×28, fit "
        "resize): the model reads what it was trained on"
    )
    _ingest(node, tmp_path / "scored")
    pixels = scored_pixels(Examples(tmp_path / "scored" / "examples"))
    assert pixels["wide.png"] == made(new_images / "wide.png", "pad") != made(new_images / "wide.png", "resize")

    # A model trained before the images' making was recorded: the config's fit, as before, and said.
    old = tmp_path / "old.pbtxt"
    old.write_text(image_schema((12, 12), ["0", "1", "7"]))
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="kflow"):
        node = image_scoring_ingest(config, (12, 12), str(new_images), "score", load_schema(old))
    assert node.parameters["image"] == {"size": [12, 12], "channels": 1, "fit": "resize"}
    assert "the model's schema does not record how its training images were made" in caplog.text
    assert "data.image's fit resize as the config says" in caplog.text


@pytest.mark.slow  # ~13 s; make test scores images as made (above)
def test_a_model_trained_on_padded_images_scores_a_wide_image_padded_when_the_config_says_resize(
    digits, new_images, tmp_path, caplog, capsys
):
    """The user trial's steps: trained with --set data.image.fit=pad, scored with the config saying resize."""
    from kflow.pipeline.cli.main import main

    config = tmp_path / "digits.yaml"
    config.write_text(yaml.safe_dump({"name": "digits", "pipeline_root": str(tmp_path / "runs"),
                                      "data": {"dataset": "images", "source": {"path": str(digits)}},
                                      "trainer": {"epochs": 2, "batch_size": 16}}))  # fmt: skip
    trained_with = [f"--set=data.image.{name}={json.dumps(value)}" for name, value in PADDED.items()]
    assert main(["run", str(config), "-q", *trained_with]) == 0
    (model_schema,) = (tmp_path / "runs" / "digits").glob("2*/train/model/assets/schema.pbtxt")
    assert annotation_tags(load_schema(model_schema), "image")["fit"] == "pad"

    out = tmp_path / "scored"
    capsys.readouterr()
    with caplog.at_level(logging.WARNING, logger="kflow"):
        assert main(["predict", str(config), "--data", str(new_images), "-o", str(out),
                     "--set", "data.image.fit=resize"]) == 0  # fmt: skip
    assert f"predict: images made as the model's training images were ({MADE}), not as data.image asks (fit " \
           "resize)" in caplog.text  # fmt: skip
    assert f"images made: {MADE}" in capsys.readouterr().out
    record = json.loads((out / "predict.json").read_text())
    assert record["image"] == {**PADDED, "background": "white", "convert": True} and record["scored"] == 2
    pixels = scored_pixels(Examples(out / "examples"))
    assert pixels["wide.png"] == made(new_images / "wide.png", "pad")
    assert pixels["square.png"] == made(new_images / "square.png", "pad")  # 12×12: as it is either way
