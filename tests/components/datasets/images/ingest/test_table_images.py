"""Images kept in tables (table_images.py): scikit-learn's digits as TFRecord files of encoded PNGs (TensorFlow's
`image/encoded` + `image/class/label` layout, one shard gzipped) and as a Parquet file of Hugging Face's layout
(`image: {bytes, path}`, `label` with its ClassLabel names in the file's metadata), read by the images ingest with
the path alone: the same pixels as the same images in class folders, every record counted, a broken image kept as
a reject at FILE#INDEX; the tabular ingests refuse such tables in one line pointing to the images dataset."""

from __future__ import annotations

import gzip
import io
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import tensorflow as tf
from PIL import Image

from kflow.components.datasets.images.ingest.executor import run
from kflow.components.datasets.images.ingest.table_images import TableImages
from kflow.components.util.schema import annotation_tags, load_schema
from kflow.pipeline.dsl.artifacts import Examples, Rejects, Schema
from tests.components.datasets.images.image_fixtures import write_digits

COUNT = 300
NAMES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]


def _digits():
    from sklearn.datasets import load_digits

    digits = load_digits()
    return (digits.images[:COUNT] * 16).clip(0, 255).astype(np.uint8), digits.target[:COUNT]


def _png(pixels: np.ndarray) -> bytes:
    out = io.BytesIO()
    Image.fromarray(pixels, "L").save(out, format="PNG")
    return out.getvalue()


def _example(**features) -> bytes:
    feature = {}
    for name, value in features.items():
        if isinstance(value, bytes):
            feature[name] = tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))
        else:
            feature[name] = tf.train.Feature(int64_list=tf.train.Int64List(value=[value]))
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


def write_tfrecords(folder, broken: bool = False):
    """Two shards (the second gzipped) of `image/encoded`, `image/format`, `image/height`, `image/class/label`."""
    images, labels = _digits()
    records = [
        _example(**{"image/encoded": _png(image), "image/format": b"png", "image/height": 8,
                    "image/class/label": int(label)})
        for image, label in zip(images, labels, strict=True)
    ]  # fmt: skip
    if broken:
        records[7] = _example(**{"image/encoded": _png(images[7])[:40], "image/class/label": int(labels[7])})
    folder.mkdir(parents=True)
    half = COUNT // 2
    with tf.io.TFRecordWriter(str(folder / "digits-00000-of-00002.tfrecord")) as writer:
        for record in records[:half]:
            writer.write(record)
    with tf.io.TFRecordWriter(str(folder / "plain")) as writer:
        for record in records[half:]:
            writer.write(record)
    (folder / "digits-00001-of-00002.tfrecord.gz").write_bytes(gzip.compress((folder / "plain").read_bytes()))
    (folder / "plain").unlink()
    return folder


def write_parquet(path):
    images, labels = _digits()
    cells = [{"bytes": _png(image), "path": f"{index}.png"} for index, image in enumerate(images)]
    kind = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    table = pa.table({"image": pa.array(cells, type=kind), "label": pa.array(labels.astype("int64"))})
    features = {"image": {"_type": "Image"}, "label": {"names": NAMES, "_type": "ClassLabel"}}
    metadata = {b"huggingface": json.dumps({"info": {"features": features}}).encode()}
    pq.write_table(table.replace_schema_metadata(metadata), path, row_group_size=128)
    return path


def ingest(root, **parameters):
    artifacts = {"examples": Examples(root / "examples"), "schema": Schema(root / "schema")}
    summary = run(**artifacts, rejects=Rejects(root / "rejects"), **parameters)
    return summary, artifacts["examples"], load_schema(artifacts["schema"].file), Rejects(root / "rejects")


def _pixels(examples: Examples, shape) -> dict[str, tuple[np.ndarray, int]]:
    """{key: (pixels, class index)} of every split."""
    spec = {"image": tf.io.FixedLenFeature([], tf.string), "label": tf.io.FixedLenFeature([], tf.int64),
            "key": tf.io.FixedLenFeature([], tf.string)}  # fmt: skip
    found = {}
    for split in examples.splits:
        for record in tf.data.TFRecordDataset(examples.split_files(split), compression_type="GZIP"):
            parsed = tf.io.parse_single_example(record, spec)
            pixels = np.frombuffer(parsed["image"].numpy(), np.uint8).reshape(shape)
            found[parsed["key"].numpy().decode()] = (pixels, int(parsed["label"]))
    return found


def test_tfrecord_images_are_the_pixels_of_the_same_images_in_folders(tmp_path, monkeypatch):
    from kflow.components.datasets.images.ingest import table_scan

    monkeypatch.setattr(table_scan, "CHUNK_RECORDS", 40)  # the plain shard read from 4 byte offsets, the .gz whole
    source = write_tfrecords(tmp_path / "shards", broken=True)
    plan = TableImages.open(str(source), "tfrecord", None).plan
    assert [(file, start, stop) for file, start, stop, _ in plan] == [
        (0, 0, 40), (0, 40, 80), (0, 80, 120), (0, 120, 150), (1, 0, 150)
    ]  # fmt: skip
    summary, examples, schema, rejects = ingest(tmp_path / "table", source_path=str(source), max_invalid_fraction=0.1)
    assert summary["read"] == COUNT and summary["rejected"] == 1
    assert summary["train"] + summary["eval"] + summary["test"] == COUNT - 1
    (reject,) = rejects.read()
    assert (reject["position"], reject["reason"]) == ("digits-00000-of-00002.tfrecord#7", "not_an_image")
    assert json.loads(annotation_tags(schema, "label")["class_names"]) == [str(digit) for digit in range(10)]
    table = _pixels(examples, (8, 8))

    _, folder_examples, _, _ = ingest(tmp_path / "folder", source_path=str(write_digits(tmp_path / "png", COUNT)))
    folders = _pixels(folder_examples, (8, 8))
    images, labels = _digits()
    for key, (pixels, label) in table.items():
        name, index = key.split("#")
        number = int(index) + (COUNT // 2 if name.endswith(".gz") else 0)
        assert label == labels[number]
        np.testing.assert_array_equal(pixels, folders[f"{labels[number]}/{number:04d}.png"][0])


def test_a_hugging_face_parquet_export_is_read_with_its_class_names(tmp_path, caplog):
    path = write_parquet(tmp_path / "digits.parquet")
    with caplog.at_level("INFO"):
        summary, examples, schema, _ = ingest(tmp_path / "out", source_path=str(path), split={"train": 4, "eval": 1,
                                              "test": 1})  # fmt: skip
    assert "the label is 'label'" in caplog.text and "made 8×8" in caplog.text
    assert (summary["read"], summary["rejected"]) == (COUNT, 0)
    assert json.loads(annotation_tags(schema, "label")["class_names"]) == NAMES
    images, labels = _digits()
    for key, (pixels, label) in _pixels(examples, (8, 8)).items():
        row = int(key.split("#")[1])
        assert label == labels[row]
        np.testing.assert_array_equal(pixels, images[row])


def test_what_is_no_image_table_or_names_no_label_is_one_line(tmp_path):
    folder = tmp_path / "t"
    folder.mkdir()
    with tf.io.TFRecordWriter(str(folder / "a.tfrecord")) as writer:
        writer.write(_example(image=_png(_digits()[0][0]), fold=1, digit=3))
    with pytest.raises(ValueError, match=r"data.label: name the label column .* beside the image 'image': digit, fold"):
        TableImages.open(str(folder / "a.tfrecord"), "tfrecord", None)
    with pytest.raises(ValueError, match="data.label: .* has no column 'kind'"):
        TableImages.check(str(folder / "a.tfrecord"), "tfrecord", "kind")
    with tf.io.TFRecordWriter(str(folder / "b.tfrecord")) as writer:
        writer.write(_example(text=b"not an image", label=1))
    with pytest.raises(ValueError, match="no column of .* holds images in its first record: encoded"):
        TableImages.check(str(folder / "b.tfrecord"), "tfrecord", None)
    with pytest.raises(ValueError, match="data.label: names the label column of images kept in a TFRecord"):
        ingest(tmp_path / "f", source_path=str(write_digits(tmp_path / "png", 20)), label="label")


def test_the_tabular_ingests_send_image_tables_to_the_images_dataset(tmp_path):
    from kflow.components.datasets.parquet.ingest.source import inspect_source
    from kflow.components.datasets.tfrecord.ingest.executor import run as run_tfrecord

    source = write_tfrecords(tmp_path / "shards")
    with pytest.raises(ValueError, match=r"the feature 'image/encoded' holds encoded images \(PNG\): read them with "
                                         r"data.dataset: images"):  # fmt: skip
        run_tfrecord(examples=Examples(tmp_path / "e"), schema=Schema(tmp_path / "s"), rejects=Rejects(tmp_path / "r"),
                     source_path=str(source), label="image/class/label")  # fmt: skip
    path = write_parquet(tmp_path / "digits.parquet")
    with pytest.raises(ValueError, match=r"the column 'image' holds images \(PNG\)"):
        inspect_source(source_path=str(path), label="label")
    images, labels = _digits()  # a list column of pixels, as an export of arrays writes it
    pa_table = pa.table({"pixels": pa.array([image.reshape(-1).tolist() for image in images]), "label": labels})
    pq.write_table(pa_table, tmp_path / "arrays.parquet")
    with pytest.raises(ValueError, match=r"the column 'pixels' holds images \(pixels, 8×8\)"):
        inspect_source(source_path=str(tmp_path / "arrays.parquet"), label="label")
    summary, _, _, _ = ingest(tmp_path / "arrays", source_path=str(tmp_path / "arrays.parquet"))
    assert (summary["read"], summary["rejected"]) == (COUNT, 0)  # which the images dataset reads
    # Text that starts as an image's magic does (a BMP's is `BM`) is no image: the table reads as a table.
    with tf.io.TFRecordWriter(str(tmp_path / "cars.tfrecord")) as writer:
        for make, price in [(b"BMW 320i", 30), (b"BMX", 3), (b"Audi", 25)] * 10:
            writer.write(_example(make=make, price=price))
    summary = run_tfrecord(examples=Examples(tmp_path / "ce"), schema=Schema(tmp_path / "cs"),
                           rejects=Rejects(tmp_path / "cr"), source_path=str(tmp_path / "cars.tfrecord"),
                           label="price", problem_type="regression")  # fmt: skip
    assert summary["read"] == 30 and summary["rejected"] == 0


@pytest.mark.slow  # trains (15 s); make test keeps the reading of the same tables above
def test_a_config_of_the_path_alone_trains_on_tfrecord_images_and_scores_new_ones(tmp_path):
    """`data.dataset: images` and the shards' folder: the image recipe learns the digits (test accuracy ≥ 0.8 after
    a few epochs), and `kflow predict` scores a TFRecord of new images without labels, keyed FILE#INDEX."""
    import csv

    import yaml

    from kflow.pipeline.cli.main import main

    source = write_tfrecords(tmp_path / "shards")
    config = {"name": "table-digits", "pipeline_root": str(tmp_path / "runs"),
              "data": {"dataset": "images", "source": {"path": str(source)}}, "trainer": {"epochs": 30}}  # fmt: skip
    (tmp_path / "digits.yaml").write_text(yaml.safe_dump(config))
    assert main(["-q", "run", str(tmp_path / "digits.yaml")]) == 0
    (metrics,) = (tmp_path / "runs" / "table-digits").glob("*/evaluate/evaluation/metrics.json")
    assert json.loads(metrics.read_text())["accuracy"] >= 0.8

    from sklearn.datasets import load_digits

    digits = load_digits()
    new = (digits.images[COUNT : COUNT + 40] * 16).clip(0, 255).astype(np.uint8)
    with tf.io.TFRecordWriter(str(tmp_path / "new.tfrecord")) as writer:
        for image in new:
            writer.write(_example(**{"image/encoded": _png(image)}))
    out = tmp_path / "scored"
    assert main(["-q", "predict", str(tmp_path / "digits.yaml"), "--data", str(tmp_path / "new.tfrecord"),
                 "-o", str(out)]) == 0  # fmt: skip
    with (out / "predictions" / "Split-score" / "predictions.csv").open() as rows:
        predicted = {row["key"]: row["predicted_class"] for row in csv.DictReader(rows)}
    assert set(predicted) == {f"new.tfrecord#{index}" for index in range(40)}
    right = sum(predicted[f"new.tfrecord#{i}"] == str(digits.target[COUNT + i]) for i in range(40))
    assert right >= 28  # 0.7 of images it never saw


def _list_example(**features) -> bytes:
    feature = {}
    for name, value in features.items():
        if isinstance(value, bytes):
            feature[name] = tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))
        elif isinstance(value, list):
            feature[name] = tf.train.Feature(float_list=tf.train.FloatList(value=value))
        else:
            feature[name] = tf.train.Feature(int64_list=tf.train.Int64List(value=[value]))
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


def test_images_kept_as_pixels_are_read_as_their_encoded_copies(tmp_path):
    """TFX's MNIST example writes each image as `image_floats` (its pixels in [0, 1]) beside `image_class`;
    TensorFlow's old converter as `image_raw` (uint8 bytes) beside `height` and `width`: the same digits read so give
    the pixels their PNG files give; the tabular tfrecord dataset refuses the first naming the images dataset."""
    from kflow.components.datasets.tfrecord.ingest.executor import run as run_tfrecord

    images, labels = _digits()
    with tf.io.TFRecordWriter(str(tmp_path / "floats.tfrecord")) as writer:
        for image, label in zip(images, labels, strict=True):
            writer.write(_list_example(image_floats=(image.reshape(-1) / 255.0).tolist(), image_class=int(label)))
    with tf.io.TFRecordWriter(str(tmp_path / "raw.tfrecord")) as writer:
        for image, label in zip(images, labels, strict=True):
            writer.write(_list_example(image_raw=image.tobytes(), height=8, width=8, label=int(label)))
    for name in ("floats", "raw"):
        summary, examples, schema, _ = ingest(tmp_path / f"out-{name}", source_path=str(tmp_path / f"{name}.tfrecord"))
        assert (summary["read"], summary["rejected"]) == (COUNT, 0)
        for key, (pixels, label) in _pixels(examples, (8, 8)).items():
            row = int(key.split("#")[1])
            assert label == labels[row], name
            np.testing.assert_array_equal(pixels, images[row])
    with pytest.raises(ValueError, match=r"the feature 'image_floats' holds 64 values a record, an image's pixels as "
                                         r"they look \(8×8\): read them with data.dataset: images"):  # fmt: skip
        run_tfrecord(examples=Examples(tmp_path / "e"), schema=Schema(tmp_path / "s"), rejects=Rejects(tmp_path / "r"),
                     source_path=str(tmp_path / "floats.tfrecord"), label="image_class")  # fmt: skip


def test_unlabelled_records_are_filtered_and_the_columns_found_past_a_first_bad_record(tmp_path):
    """Hugging Face writes -1 for "no label": such records (and those without the label feature) are filtered, not
    a class and not invalid, whatever their share; a first record without its label and with an empty image does
    not hide the columns."""
    images, labels = _digits()
    cells = [{"bytes": _png(image), "path": None} for image in images]
    kind = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    marked = np.where(np.arange(COUNT) % 3 == 0, -1, labels).astype("int64")
    metadata = {b"huggingface": json.dumps({"info": {"features": {"label": {"names": NAMES}}}}).encode()}
    table = pa.table({"image": pa.array(cells, type=kind), "label": pa.array(marked)})
    pq.write_table(table.replace_schema_metadata(metadata), tmp_path / "partly.parquet")
    summary, _, schema, rejects = ingest(tmp_path / "hf", source_path=str(tmp_path / "partly.parquet"))
    assert json.loads(annotation_tags(schema, "label")["class_names"]) == NAMES  # -1 is no class
    assert (summary["read"], summary["filtered"], summary["invalid"]) == (COUNT, COUNT // 3, 0)
    assert {reject["reason"] for reject in rejects.read()} == {"missing_label"}

    with tf.io.TFRecordWriter(str(tmp_path / "sparse.tfrecord")) as writer:
        for index, (image, label) in enumerate(zip(images, labels, strict=True)):
            features = {"image/encoded": _png(image) if index else b""}
            writer.write(_example(**features, **({"image/class/label": int(label)} if index % 10 else {})))
    summary, *_ = ingest(tmp_path / "sparse", source_path=str(tmp_path / "sparse.tfrecord"), max_invalid_fraction=0.1)
    assert (summary["read"], summary["filtered"], summary["invalid"]) == (COUNT, COUNT // 10, 0)


def test_pixels_take_each_records_shape_and_the_tables_scale(tmp_path):
    """Records of raw pixels with their own height and width (20×30, then 30×20) are each read in their shape, not
    the first's; an all-black first image of whole numbers in 0-255 does not make the table's scale [0, 1]."""
    from kflow.components.datasets.images.ingest.table_images import TableImages

    rng = np.random.default_rng(0)
    shapes = [(20, 30), (30, 20)] * 20
    images = [np.zeros(shapes[0], np.uint8), *(rng.integers(0, 256, shape, dtype=np.uint8) for shape in shapes[1:])]
    with tf.io.TFRecordWriter(str(tmp_path / "raw.tfrecord")) as writer:
        for index, image in enumerate(images):
            writer.write(_list_example(image_raw=image.tobytes(), height=image.shape[0], width=image.shape[1],
                                       label=index % 2))  # fmt: skip
    table = TableImages.open(str(tmp_path / "raw.tfrecord"), "tfrecord", None)
    assert table.raw is not None and table.raw.sizes == ("height", "width")
    for number, row in table.rows(table.plan[0]):
        decoded = np.asarray(Image.open(io.BytesIO(table.raw.encoded(row[table.image], row))))
        np.testing.assert_array_equal(decoded, images[number])
    with tf.io.TFRecordWriter(str(tmp_path / "ints.tfrecord")) as writer:  # numbers 0-255, the first image black
        for index, image in enumerate(np.stack([np.zeros((8, 8)), *(rng.integers(0, 256, (39, 8, 8)))])):
            feature = {"pixels": tf.train.Feature(int64_list=tf.train.Int64List(value=image.astype(int).reshape(-1))),
                       "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[index % 2]))}  # fmt: skip
            writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
    assert TableImages.open(str(tmp_path / "ints.tfrecord"), "tfrecord", None).raw.scale == 1.0


def test_validate_refuses_a_parquet_image_table_of_one_class(tmp_path):
    """What the run refuses after reading every label (one class), validate refuses from the label column alone."""
    images, _ = _digits()
    cells = [{"bytes": _png(image), "path": None} for image in images[:30]]
    kind = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    pq.write_table(pa.table({"image": pa.array(cells, type=kind), "label": [7] * 30}), tmp_path / "sevens.parquet")
    with pytest.raises(ValueError, match="data.label: 'label' holds 1 class in .*: a classifier needs 2"):
        TableImages.check(str(tmp_path / "sevens.parquet"), "parquet", None)
    TableImages.check(str(write_parquet(tmp_path / "digits.parquet")), "parquet", None)  # ten: no refusal
