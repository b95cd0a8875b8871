"""The Quora ingest of the real 999-row sample in ../shared/datasets (skipped when it is absent)."""

import pytest

from kflow.components.datasets.quora.ingest.executor import run
from kflow.pipeline.dsl.artifacts import Examples, Rejects, Schema
from tests.conftest import shared_dataset

pytestmark = pytest.mark.real_data


def test_real_quora_sample(tmp_path):
    sample = shared_dataset("quora-insincere") / "train_sample.csv"
    examples = Examples(tmp_path / "examples")
    summary = run(
        examples=examples,
        schema=Schema(tmp_path / "schema"),
        rejects=Rejects(tmp_path / "rejects"),
        source_path=str(sample),
    )
    stats = examples.stats
    assert stats["read"] == 999
    assert stats["rejected"] == {}
    assert stats["accepted"] == {"train": 799, "eval": 100, "test": 100}  # 999 × 8:1:1, the remainders apportioned
    assert summary["read"] == 999


@pytest.mark.slow  # ~20 s; make test ingests the real sample with the executor (above)
def test_kflow_run_until_ingest_on_the_sample_and_the_missing_source_message(run_kflow, tmp_path):
    folder = shared_dataset("quora-insincere")
    done = run_kflow(
        "run", "pipeline/configs/quora.yaml", "--until", "ingest", "--pipeline-root", tmp_path,
        "--set", f"data.source.path={folder}",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "read=999" in done.stdout + done.stderr

    env = {"HOME": str(tmp_path / "home"), "KFLOW_DATA_DIR": str(tmp_path / "data"), "PATH": "/usr/bin:/bin"}
    failed = run_kflow("run", "pipeline/configs/quora.yaml", "--until", "ingest", "--pipeline-root", tmp_path, env=env)
    assert failed.returncode == 1
    lines = [line for line in failed.stderr.splitlines() if line.startswith("kflow:")]
    assert len(lines) == 1 and lines[0].startswith("kflow: error: component 'ingest' failed")
    assert (
        f"put the competition's train.csv (qid,question_text,target) in {tmp_path / 'data'}/quora-insincere" in lines[0]
    )
    assert "Traceback" not in failed.stderr
