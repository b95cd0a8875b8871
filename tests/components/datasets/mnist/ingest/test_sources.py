"""Finding and reading MNIST sources: npz, IDX files (whole, cut short, broken) and the format detection."""

import gzip

import numpy as np
import pytest

from kflow.components.datasets.mnist.ingest.locate import resolve
from kflow.components.datasets.mnist.ingest.sources import (
    open_idx,
    read_idx_folder,
    read_npz,
    read_sklearn_digits,
)
from tests.components.datasets.mnist.ingest.conftest import idx_bytes, write_idx, write_npz


def test_read_idx_reads_gzipped_and_plain_files(arrays, tmp_path):
    for gzipped in (True, False):
        folder = write_idx(tmp_path / str(gzipped), arrays, gzipped=gzipped)
        train, test = read_idx_folder(folder)
        assert np.array_equal(train.images.read(), arrays.x_train)
        assert np.array_equal(train.labels.read(), arrays.y_train)
        assert np.array_equal(test.images.read(), arrays.x_test) and np.array_equal(test.labels.read(), arrays.y_test)
        assert train.images.declared == train.labels.declared == len(arrays.y_train)
        assert train.images.origin == "train-images-idx3-ubyte" + (".gz" if gzipped else "")


@pytest.mark.parametrize("gzipped", [True, False])
def test_idx_and_npz_files_stream_in_blocks_equal_to_the_whole(arrays, gzipped, tmp_path):
    folder = write_idx(tmp_path / "idx", arrays, gzipped=gzipped)
    npz_train, _ = read_npz(write_npz(tmp_path / "npz", arrays) / "mnist.npz")
    idx_train, _ = read_idx_folder(folder)
    for stream in (idx_train.images, npz_train.images):
        blocks = list(stream.blocks(7))
        assert [len(block) for block in blocks] == [7] * (len(arrays.x_train) // 7) + [len(arrays.x_train) % 7]
        assert np.array_equal(np.concatenate(blocks), arrays.x_train)
    assert np.array_equal(np.concatenate(list(idx_train.limit(20).labels.blocks(7))), arrays.y_train[:20])


def test_a_gzip_file_of_several_members_streams_them_all(tmp_path):
    labels = np.arange(100, dtype=np.uint8)
    content = idx_bytes(labels)
    path = tmp_path / "labels.gz"
    path.write_bytes(gzip.compress(content[:30], mtime=0) + gzip.compress(content[30:], mtime=0))
    assert open_idx(path).read().tolist() == labels.tolist()


def test_read_idx_keeps_the_complete_records_of_a_cut_gzip_stream(tmp_path):
    images = np.arange(50 * 4 * 4, dtype=np.uint8).reshape(50, 4, 4)
    compressed = gzip.compress(idx_bytes(images), mtime=0)
    path = tmp_path / "images.gz"
    path.write_bytes(compressed[: len(compressed) // 2])

    stream = open_idx(path)
    complete = stream.read()

    assert stream.declared == 50
    assert 0 < len(complete) < 50
    assert np.array_equal(complete, images[: len(complete)])


def test_read_idx_reads_big_endian_values(tmp_path):
    labels = np.array([1, 300, 70000], dtype=np.int32)
    path = tmp_path / "labels"
    path.write_bytes(idx_bytes(labels))
    stream = open_idx(path)
    assert stream.read().tolist() == [1, 300, 70000] and stream.declared == 3


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
        open_idx(path)
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
    assert len(train.labels.read()) + len(test.labels.read()) == 1797
    for split in (train, test):
        images = split.images.read()
        assert images.shape[1:] == (28, 28) and images.dtype == np.uint8
        assert images[:, 4:24, 4:24].max() == 255
        assert not images[:, :4].any() and not images[:, :, 24:].any()
    # Each digit keeps its index in scikit-learn's array as its position.
    assert sorted(train.positions.read().tolist() + test.positions.read().tolist()) == list(range(1797))
