"""The ingest executor end to end on small sources: counts, splits, shards, round trip, rejects."""

import json

import numpy as np
import pytest
import tensorflow as tf

from kflow.components.datasets.mnist.ingest.records import SplitPlan
from tests.components.datasets.mnist.ingest.conftest import (
    TEST_RECORDS,
    TRAIN_RECORDS,
    ingest,
    random_arrays,
    read_split,
    shard_keys,
    write_idx,
    write_npz,
)

READ = TRAIN_RECORDS + TEST_RECORDS


def files_by_name(ingested):
    return {
        path.relative_to(ingested.examples.path).as_posix(): path.read_bytes()
        for path in sorted(ingested.examples.path.rglob("*.gz"))
    }


def test_counts_balance_and_the_source_test_split_is_kept_whole(npz_ingested):
    stats = npz_ingested.stats
    assert stats["read"] == READ
    assert stats["rejected"] == {}
    assert stats["accepted"]["test"] == TEST_RECORDS
    assert stats["accepted"]["train"] + stats["accepted"]["eval"] == TRAIN_RECORDS
    assert 10 <= stats["accepted"]["eval"] <= 60  # About a tenth of 300.
    assert stats["read"] == sum(stats["accepted"].values()) + sum(stats["rejected"].values())
    assert npz_ingested.summary == {
        "read": READ,
        "train": stats["accepted"]["train"],
        "eval": stats["accepted"]["eval"],
        "test": TEST_RECORDS,
        "rejected": 0,
        "invalid": 0,
        "filtered": 0,
        "source_format": "npz",
    }
    assert npz_ingested.rejects.read() == []


def test_every_split_has_its_automatic_shard_count_of_files_sorted_by_key(npz_ingested):
    assert npz_ingested.examples.splits == ["eval", "test", "train"]
    for split in npz_ingested.examples.splits:
        files = npz_ingested.examples.split_files(split)
        # A few MB of Examples: one shard each (shards_per_split=3 below gives three).
        assert [path.rsplit("/", 1)[1] for path in files] == ["data_tfrecord-00000-of-00001.gz"]
        for path in files:
            keys = shard_keys(path)
            assert keys == sorted(keys)


def test_records_parse_with_the_schema_and_round_trip_exactly(npz_ingested, arrays):
    source = {"train": (arrays.x_train, arrays.y_train), "test": (arrays.x_test, arrays.y_test)}
    seen = set()
    for split in ("train", "eval", "test"):
        records = read_split(npz_ingested, split)
        assert len(records) == npz_ingested.stats["accepted"][split]
        for key, (image, label) in records.items():
            source_split, index = key.split("-")
            assert (source_split == "test") == (split == "test")
            images, labels = source[source_split]
            assert image == images[int(index)].tobytes()
            assert np.array_equal(np.frombuffer(image, np.uint8).reshape(28, 28), images[int(index)])
            assert label == labels[int(index)]
        seen |= set(records)
    assert len(seen) == READ


def test_the_split_of_a_record_depends_on_its_key_only(npz_ingested, npz_folder, tmp_path):
    plan = SplitPlan.from_parameters({"train": 9, "eval": 1})
    for split in ("train", "eval"):
        for key in read_split(npz_ingested, split):
            assert plan.assign("train", key) == split
    # Fewer records and another dict order: each record keeps its split.
    fewer = ingest(tmp_path, source_path=str(npz_folder), max_records=100, split={"eval": 1, "train": 9})
    assert fewer.stats["read"] == 100 + TEST_RECORDS
    for split in ("train", "eval", "test"):
        assert set(read_split(fewer, split)) <= set(read_split(npz_ingested, split))


def test_two_runs_write_identical_files(npz_ingested, npz_folder, tmp_path):
    again = ingest(tmp_path, source_path=str(npz_folder))
    assert files_by_name(again) == files_by_name(npz_ingested)
    assert again.examples.stats == npz_ingested.stats


def test_idx_files_gzipped_or_not_give_the_same_examples_as_the_npz(npz_ingested, arrays, tmp_path):
    for gzipped in (True, False):
        folder = write_idx(tmp_path / f"idx-{gzipped}", arrays, gzipped=gzipped)
        ingested = ingest(tmp_path / f"out-{gzipped}", source_path=str(folder))
        assert ingested.summary["source_format"] == "idx"
        assert files_by_name(ingested) == files_by_name(npz_ingested)


def test_the_schema_is_copied(npz_ingested):
    assert 'name: "label"' in npz_ingested.schema.file.read_text()


def test_custom_splits_and_shards(npz_folder, tmp_path):
    ingested = ingest(
        tmp_path, source_path=str(npz_folder), split={"train": 1, "eval": 1, "holdout": 1}, shards_per_split=3
    )
    accepted = ingested.stats["accepted"]
    assert set(accepted) == {"train", "eval", "holdout", "test"}
    assert all(60 <= accepted[name] <= 140 for name in ("train", "eval", "holdout"))
    for split in accepted:
        assert len(ingested.examples.split_files(split)) == 3
        # Splits come from the key's hash modulo 3 and so do shards: each shard still gets records.
        per_shard = [
            sum(1 for _ in tf.data.TFRecordDataset(str(file), "GZIP")) for file in ingested.examples.split_files(split)
        ]
        assert sum(per_shard) == accepted[split] and min(per_shard) >= accepted[split] // 6


def test_empty_shards_are_written_as_valid_files(npz_folder, tmp_path):
    ingested = ingest(tmp_path, source_path=str(npz_folder), max_records=2, shards_per_split=4)
    assert ingested.stats["read"] == 4
    for split in ("train", "eval", "test"):
        files = ingested.examples.split_files(split)
        assert len(files) == 4
        assert sum(len(shard_keys(path)) for path in files) == ingested.stats["accepted"][split]


def test_no_more_shards_than_records_are_written(npz_folder, tmp_path):
    ingested = ingest(tmp_path, source_path=str(npz_folder), max_records=2, shards_per_split=10_000)
    assert ingested.stats["read"] == 4
    assert {split: len(ingested.examples.split_files(split)) for split in ("train", "eval", "test")} == dict.fromkeys(
        ("train", "eval", "test"), 4
    )


def test_labels_out_of_range_are_rejected_with_reason_and_position(arrays, tmp_path):
    y_train = arrays.y_train.copy()
    y_train[[3, 7]] = 10
    folder = write_npz(tmp_path / "source", {**arrays.as_dict(), "y_train": y_train})

    ingested = ingest(tmp_path / "out", source_path=str(folder))

    stats = ingested.stats
    assert stats["rejected"] == {"label_out_of_range": 2}
    # The stats.json contract of every ingest: every MNIST reject is invalid, none filtered.
    assert stats["invalid"] == {"label_out_of_range": 2} and stats["filtered"] == {}
    assert sum(stats["accepted"].values()) == READ - 2
    rejects = ingested.rejects.read()
    assert [entry["position"] for entry in rejects] == ["mnist.npz[y_train]#3", "mnist.npz[y_train]#7"]
    assert rejects[0]["reason"] == "label_out_of_range"
    assert rejects[0]["kind"] == "invalid"
    assert rejects[0]["record"]["key"] == "train-00003"
    assert rejects[0]["record"]["label"] == 10
    assert "train-00003" not in read_split(ingested, "train") | read_split(ingested, "eval")


def test_images_of_the_wrong_size_are_all_rejected(arrays, tmp_path):
    folder = write_npz(tmp_path / "source", {**arrays.as_dict(), "x_train": arrays.x_train[:, :, :27].copy()})

    ingested = ingest(tmp_path / "out", source_path=str(folder), max_invalid_fraction=1.0)

    assert ingested.stats["rejected"] == {"wrong_image_shape": TRAIN_RECORDS}
    assert ingested.stats["accepted"] == {"train": 0, "eval": 0, "test": TEST_RECORDS}
    first = ingested.rejects.read()[0]
    assert first["position"] == "mnist.npz[x_train]#0"
    assert first["record"]["image_shape"] == [28, 27]
    assert len(ingested.examples.split_files("train")) == 1  # Empty, but there.


def test_images_of_the_wrong_size_fail_naming_the_expected_shape(arrays, tmp_path):
    folder = write_npz(tmp_path / "source", {**arrays.as_dict(), "x_train": arrays.x_train[:, :8, :8].copy()})

    with pytest.raises(ValueError) as failure:
        ingest(tmp_path / "out", source_path=str(folder))

    message = str(failure.value)
    assert "wrong_image_shape" in message
    assert "image_shape=[8, 8]" in message and "expected_shape=[28, 28]" in message


def test_unmatched_images_and_labels_are_rejected(arrays, tmp_path):
    shorter = {"y_train": arrays.y_train[:-3], "x_test": arrays.x_test[:-1]}
    folder = write_npz(tmp_path / "source", {**arrays.as_dict(), **shorter})

    ingested = ingest(tmp_path / "out", source_path=str(folder), max_invalid_fraction=0.1)

    assert ingested.stats["read"] == READ
    assert ingested.stats["rejected"] == {"missing_image": 1, "missing_label": 3}
    positions = [entry["position"] for entry in ingested.rejects.read()]
    assert positions == [
        f"mnist.npz[x_test]#{TEST_RECORDS - 1}",
        *(f"mnist.npz[y_train]#{index}" for index in range(TRAIN_RECORDS - 3, TRAIN_RECORDS)),
    ]


def test_a_truncated_idx_file_keeps_its_complete_records_and_rejects_the_rest(arrays, tmp_path):
    folder = write_idx(tmp_path / "source", arrays, gzipped=False)
    images = folder / "train-images-idx3-ubyte"
    header = 16
    images.write_bytes(images.read_bytes()[: header + 280 * 784 + 100])  # 280 records and a part of one.

    ingested = ingest(tmp_path / "out", source_path=str(folder), max_invalid_fraction=0.1)

    stats = ingested.stats
    assert stats["read"] == READ
    assert stats["rejected"] == {"truncated_idx": 20}
    assert stats["accepted"]["train"] + stats["accepted"]["eval"] == 280
    first = ingested.rejects.read()[0]
    assert first["position"] == "train-images-idx3-ubyte#280"
    assert first["record"]["key"] == "train-00280"
    assert first["record"]["images_declared"] == TRAIN_RECORDS


def test_too_many_invalid_records_fail_with_count_fraction_and_rejects_file(arrays, tmp_path):
    y_train = arrays.y_train.copy()
    y_train[:7] = 10
    folder = write_npz(tmp_path / "source", {**arrays.as_dict(), "y_train": y_train})

    with pytest.raises(ValueError) as failure:
        ingest(tmp_path / "out", source_path=str(folder), max_invalid_fraction=0.01)

    message = str(failure.value)
    assert f"7 of {READ} records are invalid (2.00%)" in message
    assert "data.filters.max_invalid_fraction=0.01" in message
    assert "label_out_of_range: 7" in message
    assert str(tmp_path / "out" / "rejects" / "rejects.jsonl") in message
    assert len((tmp_path / "out" / "rejects" / "rejects.jsonl").read_text().splitlines()) == 7


def test_sklearn_digits_become_1797_valid_mnist_records(tmp_path):
    ingested = ingest(tmp_path, source_format="sklearn_digits", shards_per_split=1)

    stats = ingested.stats
    assert stats["read"] == 1797
    assert stats["rejected"] == {}
    assert 240 <= stats["accepted"]["test"] <= 360  # About a sixth.
    records = read_split(ingested, "train")
    image = np.frombuffer(next(iter(records.values()))[0], np.uint8).reshape(28, 28)
    assert image.max() > 200
    assert not image[:4].any() and not image[24:].any() and not image[:, :4].any() and not image[:, 24:].any()
    assert {label for _, label in records.values()} == set(range(10))


@pytest.mark.parametrize(
    "parameters, message",
    [
        ({"split": {"train": 9, "eval": 0}}, "positive integer"),
        ({"split": {"train": 9, "eval": 1.5}}, "positive integer"),
        ({"split": {"train": 9, "test": 1}}, "reserved"),
        ({"split": {"Train!": 1}}, "must match"),
        ({"split": {}}, "non-empty dict"),
        ({"shards_per_split": -1}, "shards_per_split"),
        ({"max_records": 0}, "max_records"),
        ({"max_invalid_fraction": 1.5}, "max_invalid_fraction"),
        ({"source_format": "csv"}, "source_format must be one of"),
    ],
)
def test_bad_parameters_fail_before_reading(parameters, message, npz_folder, tmp_path):
    with pytest.raises(ValueError, match=message):
        ingest(tmp_path, source_path=str(npz_folder), **parameters)


def test_stats_and_rejects_files_are_json(npz_ingested):
    assert json.loads((npz_ingested.examples.path / "stats.json").read_text())["read"] == READ
    assert npz_ingested.rejects.file.read_text() == ""


def test_npz_arrays_of_another_seed_split_the_same_way(tmp_path):
    # The split of a record depends on its key, not on its content.
    first = ingest(tmp_path / "a", source_path=str(write_npz(tmp_path / "sa", random_arrays(seed=1))))
    second = ingest(tmp_path / "b", source_path=str(write_npz(tmp_path / "sb", random_arrays(seed=2))))
    for split in ("train", "eval"):
        assert set(read_split(first, split)) == set(read_split(second, split))
