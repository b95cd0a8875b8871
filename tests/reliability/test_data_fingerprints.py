"""A cached ingest is the ingest you would get now: the cache key holds the data's fingerprint, not its path."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kflow.pipeline.cli.main import main
from kflow.pipeline.runners.run_record import Run
from tests.conftest import REPO

QUORA = REPO / "pipeline" / "configs" / "quora.yaml"


def write_quora_csv(path: Path, rows: int) -> Path:
    """A Quora-format CSV (qid,question_text,target) of `rows` questions, about one in six insincere."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = ["qid,question_text,target"]
    for index in range(rows):
        lines.append(f"{index:020x},Is question number {index} about the weather today?,{int(index % 6 == 0)}")
    path.write_text("\n".join(lines) + "\n")
    return path


def ingest(root: Path) -> tuple[str, dict]:
    """Runs the quora pipeline up to its ingest; returns the ingest's status and its stats."""
    assert main(["run", str(QUORA), "--until", "ingest", "--pipeline-root", str(root)]) == 0
    run = Run.load(sorted((root / "quora").glob("*/run.json"))[-1].parent)
    execution = run.executions["ingest"]
    return execution.status, json.loads((Path(execution.outputs["examples"].uri) / "stats.json").read_text())


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    folder = tmp_path / "data-a"
    write_quora_csv(folder / "quora-insincere" / "train.csv", 60)
    monkeypatch.setenv("KFLOW_DATA_DIR", str(folder))
    return folder


def test_changed_replaced_truncated_or_moved_data_is_never_served_from_the_cache(data_dir, tmp_path, monkeypatch):
    root = tmp_path / "runs"
    csv = data_dir / "quora-insincere" / "train.csv"
    status, first = ingest(root)
    assert (status, first["read"]) == ("succeeded", 60)
    assert ingest(root) == ("cached", first)

    # The same size, one character changed in place: a stale cache would say read=60 and keep the old text.
    original = csv.read_bytes()
    csv.write_bytes(original.replace(b"number 7 about", b"number 7 abouT"))
    assert len(csv.read_bytes()) == len(original)
    assert ingest(root)[0] == "succeeded"

    # Restored: the first run's outputs are the right ones again.
    csv.write_bytes(original)
    assert ingest(root)[0] == "cached"

    # Another file in another folder (KFLOW_DATA_DIR=B): 30 rows, so the counts must change.
    other = tmp_path / "data-b"
    write_quora_csv(other / "quora-insincere" / "train.csv", 30)
    monkeypatch.setenv("KFLOW_DATA_DIR", str(other))
    status, stats = ingest(root)
    assert (status, stats["read"]) == ("succeeded", 30)

    # Truncated in place.
    monkeypatch.setenv("KFLOW_DATA_DIR", str(data_dir))
    csv.write_text("\n".join(original.decode().splitlines()[:21]) + "\n")
    status, stats = ingest(root)
    assert (status, stats["read"]) == ("succeeded", 20)

    # The original bytes at another path: the same data, so the cache serves it.
    moved = tmp_path / "data-c"
    shutil.copytree(data_dir, moved)
    (moved / "quora-insincere" / "train.csv").write_bytes(original)
    monkeypatch.setenv("KFLOW_DATA_DIR", str(moved))
    status, stats = ingest(root)
    assert (status, stats["read"]) == ("cached", 60)


def test_the_run_record_names_the_files_read_and_their_hashes(data_dir, tmp_path):
    root = tmp_path / "runs"
    ingest(root)
    record = json.loads(sorted((root / "quora").glob("*/run.json"))[-1].read_text())
    (entry,) = record["components"]["ingest"]["data"]["files"]
    csv = data_dir / "quora-insincere" / "train.csv"
    assert entry["path"] == str(csv.resolve()) and entry["size"] == csv.stat().st_size
    assert len(entry["sha256"]) == 64


def test_missing_data_fails_the_ingest_with_one_clear_error(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KFLOW_DATA_DIR", str(tmp_path / "empty"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert main(["run", str(QUORA), "--until", "ingest", "--pipeline-root", str(tmp_path / "runs")]) == 1
    assert "no local copy of quora found" in capsys.readouterr().err
