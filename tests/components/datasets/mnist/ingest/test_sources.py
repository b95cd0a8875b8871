"""Finding and reading MNIST sources: npz, IDX files (whole, cut short, broken) and the format detection."""

import gzip

import numpy as np
import pytest

from kflow.components.datasets.mnist.ingest.locate import resolve
from kflow.components.datasets.mnist.ingest.sources import (
    read_idx,
    read_idx_folder,
    read_npz,
    read_sklearn_digits,
)
from tests.components.datasets.mnist.ingest.conftest import idx_bytes, write_idx, write_npz


def test_read_idx_reads_gzipped_and_plain_files(arrays, tmp_path):
    for gzipped in (True, False):
        folder = write_idx(tmp_path / str(gzipped), arrays, gzipped=gzipped)
        train, test = read_idx_folder(folder)
        assert np.array_equal(train.images, arrays.x_train) and np.array_equal(train.labels, arrays.y_train)
        assert np.array_equal(test.images, arrays.x_test) and np.array_equal(test.labels, arrays.y_test)
        assert train.size == len(arrays.y_train) and train.paired == train.size
        assert train.image_origin == "train-images-idx3-ubyte" + (".gz" if gzipped else "")


def test_read_idx_keeps_the_complete_records_of_a_cut_gzip_stream(tmp_path):
    images = np.arange(50 * 4 * 4, dtype=np.uint8).reshape(50, 4, 4)
    compressed = gzip.compress(idx_bytes(images), mtime=0)
    path = tmp_path / "images.gz"
    path.write_bytes(compressed[: len(compressed) // 2])

    complete, declared = read_idx(path)

    assert declared == 50
    assert 0 < len(complete) < 50
    assert np.array_equal(complete, images[: len(complete)])


def test_read_idx_reads_big_endian_values(tmp_path):
    labels = np.array([1, 300, 70000], dtype=np.int32)
    path = tmp_path / "labels"
    path.write_bytes(idx_bytes(labels))
    values, declared = read_idx(path)
    assert values.tolist() == [1, 300, 70000] and declared == 3


@pytest.mark.parametrize(
    "content, message",
    [
        (b"", "magic number is missing"),
        (b"\x00\x00\x08\x03\x00\x00", "IDX header is cut short"),
        (b"PK\x03\x04" + bytes(20), "not an IDX file"),
        (b"\x00\x00\x42\x01" + bytes(8), "not an IDX file"),
    ],
)
def test_a_broken_idx_header_is_an_error_naming_the_file(content, message, tmp_path):
    path = tmp_path / "train-images-idx3-ubyte"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=message) as failure:
        read_idx(path)
    assert str(path) in str(failure.value)


def test_a_folder_missing_an_idx_file_is_an_error_listing_it(arrays, tmp_path):
    folder = write_idx(tmp_path, arrays)
    (folder / "t10k-labels-idx1-ubyte.gz").unlink()
    with pytest.raises(ValueError, match="lacks the IDX files: t10k-labels-idx1-ubyte.gz or"):
        read_idx_folder(folder)


def test_read_npz_refuses_pickled_objects_and_missing_arrays(arrays, tmp_path):
    ragged = np.empty(2, dtype=object)
    ragged[0], ragged[1] = np.zeros((28, 28), np.uint8), np.zeros((5, 5), np.uint8)
    path = tmp_path / "objects.npz"
    np.savez(path, **{**arrays.as_dict(), "x_train": ragged})
    with pytest.raises(ValueError, match="holds Python objects"):
        read_npz(path)

    path = tmp_path / "partial.npz"
    np.savez(path, x_train=arrays.x_train)
    with pytest.raises(ValueError, match=r"lacks the arrays \['y_train', 'x_test', 'y_test'\]"):
        read_npz(path)

    path = tmp_path / "garbage.npz"
    path.write_bytes(b"PK\x03\x04 not really a zip file")
    with pytest.raises(ValueError, match="not a readable .npz file"):
        read_npz(path)


def test_auto_finds_the_npz_then_the_idx_files(arrays, tmp_path):
    npz_folder = write_npz(tmp_path / "npz", arrays)
    idx_folder = write_idx(tmp_path / "idx", arrays)
    assert resolve(str(npz_folder), "auto") == ("npz", npz_folder / "mnist.npz")
    assert resolve(str(npz_folder / "mnist.npz"), "auto") == ("npz", npz_folder / "mnist.npz")
    assert resolve(str(idx_folder), "auto") == ("idx", idx_folder)
    write_npz(idx_folder, arrays)
    assert resolve(str(idx_folder), "auto") == ("npz", idx_folder / "mnist.npz")
    assert resolve(str(idx_folder), "idx") == ("idx", idx_folder)


def test_auto_without_a_path_looks_in_the_keras_folder(arrays, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(ValueError) as failure:
        resolve(None, "auto")
    message = str(failure.value)
    assert str(tmp_path / ".keras" / "datasets" / "mnist.npz") in message
    assert "source_path" in message and "'download'" in message

    write_npz(tmp_path / ".keras" / "datasets", arrays)
    assert resolve(None, "auto") == ("npz", tmp_path / ".keras" / "datasets" / "mnist.npz")


def test_resolve_explains_what_it_cannot_use(arrays, tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        resolve(str(tmp_path / "nowhere"), "auto")
    with pytest.raises(ValueError, match="holds neither mnist.npz nor the MNIST IDX files"):
        resolve(str(tmp_path), "auto")
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(ValueError, match="not an .npz file"):
        resolve(str(tmp_path / "notes.txt"), "auto")
    with pytest.raises(ValueError, match="needs the folder"):
        resolve(str(tmp_path / "notes.txt"), "idx")
    with pytest.raises(ValueError, match="reads no file"):
        resolve(str(tmp_path), "sklearn_digits")


def test_sklearn_digits_in_the_mnist_layout():
    train, test = read_sklearn_digits()
    assert train.size + test.size == 1797
    for split in (train, test):
        assert split.images.shape[1:] == (28, 28) and split.images.dtype == np.uint8
        assert split.images[:, 4:24, 4:24].max() == 255
        assert not split.images[:, :4].any() and not split.images[:, :, 24:].any()
    # Each digit keeps its index in scikit-learn's array as its position.
    assert sorted(train.positions.tolist() + test.positions.tolist()) == list(range(1797))
