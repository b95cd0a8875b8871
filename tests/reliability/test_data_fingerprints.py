"""A cached ingest is the ingest you would get now: the cache key holds the data's fingerprint, not its path."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kflow.pipeline.cli.main import main
from kflow.pipeline.runners.run_record import Run
from tests.conftest import REPO, shared_dataset

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


WIKITEXT2 = REPO / "pipeline" / "configs" / "wikitext2.yaml"
# The shipped model, trained for three steps: what matters here is which components run, not how well.
QUICK_TRAINING = (
    "trainer.strategy=default",
    "trainer.epochs=1",
    "trainer.steps_per_epoch=3",
    "trainer.model_options.vocabulary_size=1000",
    "evaluator.on_not_blessed=warn",
)


def edit_one_line_and_restore(tmp_path, run_kflow, *extra: str) -> list[dict[str, str]]:
    """Runs WikiText-2 on a copy of the real corpus three times: as is, with one train line edited,
    and restored; returns each run's component statuses."""
    corpus = tmp_path / "wikitext-2"
    shutil.copytree(shared_dataset("wikitext-2"), corpus)
    args = ["run", WIKITEXT2, "--pipeline-root", tmp_path / "runs", "--set", f"data.source.path={corpus}", *extra]
    train_file = corpus / "train.txt"
    original = train_file.read_text()
    lines = original.splitlines(keepends=True)
    long_line = next(index for index, line in enumerate(lines) if len(line) > 200 and not line.strip().startswith("="))
    edited = lines[:long_line] + [lines[long_line].replace(" the ", " a ", 1)] + lines[long_line + 1 :]
    statuses = []
    for text in (original, "".join(edited), original):
        train_file.write_text(text)
        result = run_kflow(*args)
        assert result.returncode == 0, result.stderr[-3000:]
        record = json.loads(sorted((tmp_path / "runs" / "wikitext2").glob("*/run.json"))[-1].read_text())
        statuses.append({node: entry["status"] for node, entry in record["components"].items()})
    return statuses


@pytest.mark.real_data
@pytest.mark.slow  # make test keeps the changed/replaced/truncated/moved cases above
def test_one_edited_line_of_real_wikitext2_reruns_the_ingest_and_restoring_it_hits_the_cache(tmp_path, run_kflow):
    first, edited, restored = edit_one_line_and_restore(tmp_path, run_kflow, "--until", "ingest")
    assert (first, edited, restored) == ({"ingest": "succeeded"}, {"ingest": "succeeded"}, {"ingest": "cached"})


@pytest.mark.real_data
@pytest.mark.slow
def test_one_edited_line_of_real_wikitext2_reruns_ingest_train_and_evaluate(tmp_path, run_kflow):
    settings = [argument for setting in QUICK_TRAINING for argument in ("--set", setting)]
    first, edited, restored = edit_one_line_and_restore(tmp_path, run_kflow, *settings)
    assert set(first.values()) == {"succeeded"}
    nodes = ("ingest", "transform", "train", "evaluate")  # the Transform learns the WordPiece vocabulary
    assert edited == dict.fromkeys(nodes, "succeeded")
    assert restored == dict.fromkeys(nodes, "cached")
