"""The WikiText-2 ingest of the real corpus in ../shared/datasets/wikitext-2 (skipped when it is absent)."""

import pytest

from tests.components.datasets.wikitext2.ingest.conftest import ingest
from tests.conftest import shared_dataset

pytestmark = pytest.mark.real_data


def test_real_wikitext2_default_filters(tmp_path):
    _, examples, rejects, _ = ingest(tmp_path, source_path=str(shared_dataset("wikitext-2")), shards_per_split=4)
    stats = examples.stats
    assert stats["read"] == 36718 + 3760 + 4358
    # The Keras guide keeps the 15,274 train lines longer than 100 characters; one of them is a heading.
    assert stats["accepted"] == {"train": 15273, "eval": 1645, "test": 1833}
    assert stats["invalid"] == {}
    assert stats["filtered"] == {"blank": 15717, "heading": 7537, "too_short": 2831}
    assert stats["read"] == sum(stats["accepted"].values()) + sum(stats["rejected"].values())
    assert len(rejects.file.read_text().splitlines()) == sum(stats["rejected"].values())
    assert len(list(examples.split_uri("train").glob("*.gz"))) == 4
