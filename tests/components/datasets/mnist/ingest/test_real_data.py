"""The ingest of the real MNIST in ../shared/datasets/mnist (skipped when it is absent)."""

from pathlib import Path

import pytest

from tests.components.datasets.mnist.ingest.conftest import ingest
from tests.conftest import SHARED_DATASETS

MNIST = SHARED_DATASETS / "mnist"

pytestmark = pytest.mark.real_data


@pytest.fixture(scope="module")
def mnist() -> Path:
    if not (MNIST / "mnist.npz").is_file():
        pytest.skip(f"the real MNIST is not at {MNIST} (see ../shared/datasets/README.md)")
    return MNIST


@pytest.fixture(scope="module")
def npz_stats(mnist, tmp_path_factory):
    return ingest(tmp_path_factory.mktemp("mnist-npz"), source_path=str(mnist), source_format="npz").stats


def test_real_mnist_npz(npz_stats):
    accepted = npz_stats["accepted"]
    assert npz_stats["read"] == 70000
    assert npz_stats["rejected"] == {}
    assert accepted["test"] == 10000
    assert accepted["train"] + accepted["eval"] == 60000
    assert abs(accepted["eval"] - 6000) <= 600  # 10 % of 60,000, give or take 1 % of it.


def test_real_mnist_idx_files_split_like_the_npz(mnist, npz_stats, tmp_path):
    idx_stats = ingest(tmp_path, source_path=str(mnist), source_format="idx").stats
    assert idx_stats == npz_stats
