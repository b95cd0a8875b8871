"""A cached execution is reused only when its outputs are what was published: its manifest says so."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from kflow.pipeline.runners.beam_dag_runner import BeamDagRunner
from kflow.pipeline.runners.manifest import MANIFEST
from tests.conftest import REPO
from tests.reliability.toy import blob_pipeline

DEMO = REPO / "pipeline" / "configs" / "demo.yaml"


def status(result) -> str:
    return result.record["components"]["blob"]["status"]


def test_every_published_execution_has_a_manifest_of_its_files(tmp_path):
    result = BeamDagRunner().run(blob_pipeline(size=5000), tmp_path)
    manifest = json.loads((result.run_dir / "blob" / MANIFEST).read_text())
    (entry,) = manifest["files"].values()
    assert list(manifest["files"]) == ["blob/data.bin"]
    assert entry["size"] == 5000 and len(entry["sha256"]) == 64


def test_an_altered_missing_or_added_file_is_a_cache_miss_with_a_warning(tmp_path, caplog):
    first = BeamDagRunner().run(blob_pipeline(), tmp_path)
    data = first.run_dir / "blob" / "blob" / "data.bin"
    assert status(BeamDagRunner().run(blob_pipeline(), tmp_path)) == "cached"

    caplog.set_level(logging.WARNING, logger="kflow")
    data.write_bytes(b"k" * 999)  # One byte short.
    again = BeamDagRunner().run(blob_pipeline(), tmp_path)
    assert status(again) == "succeeded"
    assert f"{data}: 999 bytes, recorded 1000" in caplog.text

    # The fresh copy serves now; removing one of its files, or adding one, makes it unusable too.
    fresh = again.run_dir / "blob" / "blob"
    (fresh / "data.bin").unlink()
    caplog.clear()
    third = BeamDagRunner().run(blob_pipeline(), tmp_path)
    assert status(third) == "succeeded" and f"{fresh / 'data.bin'}: missing" in caplog.text
    (third.run_dir / "blob" / "blob" / "stray.tfrecord.gz").write_bytes(b"")
    caplog.clear()
    assert status(BeamDagRunner().run(blob_pipeline(), tmp_path)) == "succeeded"
    assert "stray.tfrecord.gz: not in the manifest" in caplog.text


def test_a_same_size_change_is_caught_by_verify(tmp_path, caplog):
    first = BeamDagRunner().run(blob_pipeline(), tmp_path)
    data = first.run_dir / "blob" / "blob" / "data.bin"
    data.write_bytes(b"x" * 1000)  # Same size, other bytes: only the hash can tell.
    assert status(BeamDagRunner().run(blob_pipeline(), tmp_path)) == "cached"
    caplog.set_level(logging.WARNING, logger="kflow")
    verified = BeamDagRunner(verify_hashes=True).run(blob_pipeline(), tmp_path)
    assert status(verified) == "succeeded"
    assert f"{data}: content differs from its recorded SHA-256" in caplog.text


@pytest.mark.slow  # ~20 s; make test keeps altered, missing and same-size-changed files (above).
def test_a_truncated_shard_of_a_cached_ingest_reruns_the_ingest(tmp_path, run_kflow):
    """The real thing: the demo's ingest, a TFRecord shard cut short, and `kflow run` again."""
    args = ("run", DEMO, "--pipeline-root", tmp_path, "--until", "ingest")
    assert run_kflow(*args).returncode == 0
    (shard,) = sorted(tmp_path.glob("demo/*/ingest/examples/Split-train/*.gz"))
    shard.write_bytes(shard.read_bytes()[:-100])
    result = run_kflow(*args)
    assert result.returncode == 0, result.stderr[-2000:]
    assert f"{shard}: " in result.stderr and "recorded" in result.stderr
    newest = sorted(tmp_path.glob("demo/*/run.json"))[-1]
    record = json.loads(newest.read_text())
    assert record["components"]["ingest"]["status"] == "succeeded"
    stats = json.loads((Path(newest.parent) / "ingest" / "examples" / "stats.json").read_text())
    assert stats["read"] == 1797
