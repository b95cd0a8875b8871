"""An image folder with only its path: the ingest infers the size (the most common among a sample of the files) as
it infers the channels, says it in the log, and makes every image that size; `kflow validate` accepts the config
and `kflow run` trains and evaluates a model on it. Real pixels: scikit-learn's digits, upscaled to two sizes."""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest
import tensorflow as tf
import yaml

from kflow.components.datasets.images.ingest import image_format
from kflow.components.datasets.images.ingest.executor import run
from kflow.components.datasets.images.ingest.image_format import ImageFormat, common_size
from kflow.components.datasets.images.ingest.source import list_images
from kflow.components.util.schema import annotation_tags, load_schema
from kflow.pipeline.dsl.artifacts import Examples, Rejects, Schema
from tests.components.datasets.images.image_fixtures import write_two_size_digits

SIZE_LINE = "data.image.size not set: 12×12 (height×width), the most common size: 81 of the 120 files sampled"


@pytest.fixture(scope="module")
def digits(tmp_path_factory):
    """120 digits (0, 1, 7): 81 as 12×12 PNGs, 39 as 16×16 JPEGs."""
    return write_two_size_digits(tmp_path_factory.mktemp("images") / "digits")


def ingest(folder, **parameters):
    examples, schema, rejects = Examples(folder / "ex"), Schema(folder / "schema"), Rejects(folder / "rej")
    summary = run(examples=examples, schema=schema, rejects=rejects, max_invalid_fraction=1.0, **parameters)
    return summary, examples, schema, rejects


def pixel_counts(examples) -> set[int]:
    return {
        len(tf.train.Example.FromString(record.numpy()).features.feature["image"].bytes_list.value[0])
        for split in examples.splits
        for record in tf.data.TFRecordDataset(examples.split_files(split), compression_type="GZIP")
    }


def test_no_image_options_leave_the_size_to_the_data():
    assert ImageFormat.from_options(None) == ImageFormat(None, None)
    assert ImageFormat.from_options({"fit": "pad", "channels": 3}) == ImageFormat(None, None, 3, "pad")
    with pytest.raises(ValueError, match="data.image.shape|not inferred yet"):
        ImageFormat.from_options({}).shape(1)
    with pytest.raises(ValueError, match=r"data.image: a mapping such as \{size: \[28, 28\]\}"):
        ImageFormat.from_options([28, 28])


def test_the_most_common_size_is_inferred_logged_and_every_image_resized_to_it(digits, tmp_path, caplog):
    with caplog.at_level(logging.INFO, logger="kflow"):
        summary, examples, schema, _ = ingest(tmp_path, source_path=str(digits))

    assert SIZE_LINE in caplog.text
    assert "images of another size are resized to it" in caplog.text
    assert summary["read"] == 120 and summary["rejected"] == 0
    assert annotation_tags(load_schema(schema.file), "image")["shape"] == "12,12"  # Grey: the first image's mode.
    assert pixel_counts(examples) == {144}  # The 16×16 JPEGs too.


def test_a_declared_size_still_wins_and_fit_exact_keeps_only_the_inferred_size(digits, tmp_path):
    _, examples, schema, _ = ingest(tmp_path / "declared", source_path=str(digits), image={"size": [8, 8]})
    assert annotation_tags(load_schema(schema.file), "image")["shape"] == "8,8" and pixel_counts(examples) == {64}

    summary, examples, _, rejects = ingest(tmp_path / "exact", source_path=str(digits), image={"fit": "exact"})
    assert summary["rejected"] == 39 and pixel_counts(examples) == {144}
    assert {(entry["reason"], tuple(entry["size"]), tuple(entry["expected_size"])) for entry in rejects.read()} == {
        ("wrong_size", (16, 16), (12, 12))
    }


def test_the_sample_is_spread_over_every_class_folder(tmp_path, monkeypatch):
    """The first class's images are all 16×16 and the two others' 12×12: a sample of the first files only would
    pick 16×16; one taken across the listing sees the majority."""
    from PIL import Image

    for label, side in (("a", 16), ("b", 12), ("c", 12)):
        (tmp_path / label).mkdir()
        for index in range(10):
            Image.fromarray(np.full((side, side), 20 * index, np.uint8), "L").save(tmp_path / label / f"{index}.png")
    (tmp_path / "c" / "notes.png").write_text("not an image: skipped by the sample, rejected by the worker\n")
    monkeypatch.setattr(image_format, "SIZE_SAMPLE", 9)

    assert common_size(list_images(str(tmp_path))) == (12, 12)


def test_an_inferred_size_past_256_pixels_a_side_is_scaled_down_keeping_its_shape(tmp_path, caplog):
    """Photos as cameras save them (here 600×400 landscape JPEGs of real digits): the inferred size keeps their
    shape within Keras' default 256 a side, said in the log; a declared size is kept as it is."""
    from PIL import Image
    from sklearn.datasets import load_digits

    digits = load_digits()
    for index in range(12):
        folder = tmp_path / "photos" / str(digits.target[index] % 2)
        folder.mkdir(parents=True, exist_ok=True)
        pixels = (digits.images[index] * 16).clip(0, 255).astype(np.uint8)
        Image.fromarray(pixels, "L").convert("RGB").resize((600, 400)).save(folder / f"{index}.jpg")
    with caplog.at_level(logging.INFO, logger="kflow"):
        _, examples, schema, _ = ingest(tmp_path / "inferred", source_path=str(tmp_path / "photos"))
    assert "400×600 is larger than an inferred size may be (256 pixels a side" in caplog.text
    assert annotation_tags(load_schema(schema.file), "image")["shape"] == "171,256,3"
    assert pixel_counts(examples) == {171 * 256 * 3}
    _, _, schema, _ = ingest(tmp_path / "declared", source_path=str(tmp_path / "photos"), image={"size": [400, 600]})
    assert annotation_tags(load_schema(schema.file), "image")["shape"] == "400,600,3"


def test_photos_of_every_size_take_their_median_height_and_width_not_the_first_ones(tmp_path, caplog):
    """Crops of scikit-learn's two sample photographs, each of its own size (as a scraped folder or Caltech-101's
    are), the first one a 40×230 strip: no size is common, so the first seen would have made every photo a strip;
    the median height and width keep their typical shape."""
    from PIL import Image
    from sklearn.datasets import load_sample_images

    rng = np.random.default_rng(7)
    sizes = [(40, 230)] + [(int(rng.integers(60, 200)), int(rng.integers(80, 240))) for _ in range(23)]
    heights, widths = zip(*sizes, strict=True)
    for index, (photo, (height, width)) in enumerate(zip(load_sample_images().images * 12, sizes, strict=True)):
        folder = tmp_path / "photos" / f"class {index % 2}"
        folder.mkdir(parents=True, exist_ok=True)
        Image.fromarray(photo[:height, :width]).save(folder / f"{index:02d}.jpg")
    with caplog.at_level(logging.INFO, logger="kflow"):
        size = common_size(list_images(str(tmp_path / "photos")))
    assert size == (round(float(np.median(heights))), round(float(np.median(widths))))
    assert f"{size[0]}×{size[1]} (height×width), the median height and width of the 24 files sampled" in caplog.text
    assert "their sizes vary (24 sizes; the most common, " in caplog.text


def test_no_readable_image_in_the_sample_is_one_line(tmp_path):
    for label in ("a", "b"):
        (tmp_path / label).mkdir()
        (tmp_path / label / "x.png").write_text("text\n")
    with pytest.raises(ValueError, match=r"^data.source.path: none of the 2 sampled files is an image Pillow reads$"):
        common_size(list_images(str(tmp_path)))


def test_a_config_of_a_path_only_validates_and_trains(digits, tmp_path, run_kflow):
    config = tmp_path / "digits.yaml"
    config.write_text(yaml.safe_dump({"name": "digits", "pipeline_root": str(tmp_path / "runs"),
                                      "data": {"dataset": "images", "source": {"path": str(digits)}}}))  # fmt: skip

    done = run_kflow("validate", config)
    assert done.returncode == 0 and "valid" in done.stdout, done.stderr[-2000:]

    done = run_kflow("run", config, "--set", "trainer.epochs=3", "--set", "trainer.batch_size=16")

    assert done.returncode == 0, done.stderr[-3000:]
    assert SIZE_LINE in done.stderr + done.stdout
    (run_dir,) = (tmp_path / "runs" / "digits").glob("2*")
    stats = json.loads((run_dir / "ingest" / "examples" / "stats.json").read_text())
    assert stats["read"] == 120 and stats["invalid"] == {}
    metrics = json.loads((run_dir / "evaluate" / "evaluation" / "metrics.json").read_text())
    assert metrics["example_count"] == stats["accepted"]["test"] == 12
    assert metrics["accuracy"] >= 0.75, metrics  # Three classes: chance is 0.33 (0.92 measured).
    assert metrics["confusion_matrix"]["categories"] == ["0", "1", "7"]


def test_an_images_config_without_a_path_is_one_line_naming_the_field(tmp_path, run_kflow):
    config = tmp_path / "nothing.yaml"
    config.write_text(yaml.safe_dump({"name": "x", "pipeline_root": str(tmp_path), "data": {"dataset": "images"}}))

    done = run_kflow("validate", config)

    assert done.returncode == 2 and "Traceback" not in done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"kflow: {config}: data.source.path: required by the images dataset")


@pytest.mark.slow  # three short trainings (~40 s)
def test_a_new_image_size_evaluates_without_the_baseline_of_the_old_one_and_back(digits, tmp_path, run_kflow):
    """data.image.size changed after a blessed run: the latest blessed model reads 12×12 images, the new data is
    16×16; the evaluation said Keras' shape error, exit 1, and so did the old config after (a user trial). Now the
    baseline is left out with the reason, as a tabular one lacking a column is, either way."""
    config = tmp_path / "digits.yaml"
    config.write_text(yaml.safe_dump({"name": "digits", "pipeline_root": str(tmp_path / "runs"),
                                      "data": {"dataset": "images", "source": {"path": str(digits)}},
                                      "trainer": {"epochs": 2, "batch_size": 16}}))  # fmt: skip
    for size in ([], ["--set", "data.image.size=[16, 16]"], ["--set", "data.image.size=[12, 12]"]):
        done = run_kflow("run", config, *size)
        assert done.returncode == 0, done.stderr[-3000:]
    runs = sorted((tmp_path / "runs" / "digits").glob("2*/run.json"))
    reasons = [json.loads(path.read_text())["components"]["evaluate"]["summary"].get("no_baseline") for path in runs]
    assert reasons[1].endswith("reads inputs of shape 12×12; this data's are 16×16 (images of another size or "
                               "channels?)"), reasons  # fmt: skip
    assert "reads inputs of shape 16×16; this data's are 12×12" in reasons[2], reasons


def test_validate_refuses_a_folder_of_no_image_pillow_reads_and_warns_once(digits, tmp_path, run_kflow):
    """Class folders of `.png` files that are no images: validate said `valid` and the run failed (a user trial);
    the warning of a small class was said twice."""
    broken = tmp_path / "broken"
    for index, name in enumerate(["0", "0", "1", "1", "7", "7"]):
        (broken / name).mkdir(parents=True, exist_ok=True)
        (broken / name / f"{index}.png").write_text("not an image\n")
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({"name": "b", "data": {"dataset": "images", "source": {"path": str(broken)}}}))
    done = run_kflow("validate", config)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert done.stderr.strip().splitlines()[-1].endswith("none of the 6 sampled files is an image Pillow reads")
    assert done.stderr.count("hold fewer than 5 images") == 1, done.stderr
