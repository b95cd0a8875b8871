"""`kflow diff`'s test-data verdict: Examples of other fingerprints (a cache key: the code's version is part of it)
whose test splits hold the same bytes are the same test data; a byte changed is not."""

from __future__ import annotations

import shutil

from kflow.pipeline.cli.test_data import _same_bytes
from kflow.pipeline.dsl.artifacts import Examples
from kflow.pipeline.runners.run_record import ArtifactRef
from tests.components.datasets.text_fixtures import write_records


def test_the_same_bytes_under_another_fingerprint_are_the_same_test_data(tmp_path):
    first = Examples(tmp_path / "a")
    write_records(first, "test", [{"text": f"line {n}".encode(), "label": n % 2} for n in range(50)])
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    a, b = (ArtifactRef("Examples", str(tmp_path / name), fingerprint=name) for name in "ab")
    assert _same_bytes(a, b)
    shard = sorted(Examples(tmp_path / "b").split_uri("test").glob("*"))[0]
    data = bytearray(shard.read_bytes())
    data[-9] ^= 1
    shard.write_bytes(bytes(data))
    assert not _same_bytes(a, b)
