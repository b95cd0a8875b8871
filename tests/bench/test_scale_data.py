"""The scale data generators of bench/: deterministic, and what their docstrings say they make."""

import sys
from pathlib import Path

import numpy as np

from kflow.components.datasets.mnist.ingest.sources import read_idx_folder

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import scale_data  # noqa: E402


def _shift_of(original: np.ndarray, moved: np.ndarray) -> tuple[int, int] | None:
    for dy, dx in scale_data.SHIFTS:
        padded = np.zeros((original.shape[0] + 4, original.shape[1] + 4), original.dtype)
        padded[2 + dy : 2 + dy + original.shape[0], 2 + dx : 2 + dx + original.shape[1]] = original
        if np.array_equal(padded[2:-2, 2:-2], moved):
            return dy, dx
    return None


def test_mnist_times_three_is_the_original_then_two_shifted_copies(tmp_path):
    rng = np.random.default_rng(1)
    arrays = {
        "x_train": rng.integers(1, 256, size=(40, 28, 28), dtype=np.uint8),
        "y_train": rng.integers(0, 10, size=40, dtype=np.uint8),
        "x_test": rng.integers(1, 256, size=(10, 28, 28), dtype=np.uint8),
        "y_test": rng.integers(0, 10, size=10, dtype=np.uint8),
    }
    np.savez(tmp_path / "mnist.npz", **arrays)

    scale_data.mnist(tmp_path, 3, tmp_path / "x3")
    scale_data.mnist(tmp_path, 3, tmp_path / "again")

    for name in (tmp_path / "x3").iterdir():
        assert name.read_bytes() == (tmp_path / "again" / name.name).read_bytes()  # Deterministic.
    train, test = read_idx_folder(tmp_path / "x3")
    for split, source in ((train, "train"), (test, "test")):
        images, labels = split.images.read(), split.labels.read()
        original, original_labels = arrays[f"x_{source}"], arrays[f"y_{source}"]
        assert split.images.declared == split.labels.declared == 3 * len(original)
        assert np.array_equal(labels, np.tile(original_labels, 3))
        assert np.array_equal(images[: len(original)], original)
        shifts = [_shift_of(original[i % len(original)], images[i]) for i in range(len(original), len(images))]
        assert None not in shifts and len(set(shifts)) > 5  # Every copy is moved, by shifts drawn per image.
