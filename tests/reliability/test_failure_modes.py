"""Bounded failure modes: each ends in one clear error line and exit 1, publishes nothing partial, and
leaves earlier runs' artifacts intact."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys

import pytest

from kflow.pipeline.dsl.dag import Pipeline
from kflow.pipeline.runners.beam_dag_runner import BeamDagRunner, PipelineFailed
from kflow.pipeline.runners.manifest import manifest_problem
from tests.conftest import REPO
from tests.reliability.toy import RUN_TOY, CopySource, blob_pipeline

DEMO = REPO / "pipeline" / "configs" / "demo.yaml"


def kflow_errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("kflow:")]


def test_an_unusable_pipeline_root_is_one_clear_error(tmp_path, run_kflow):
    # The tests run as root, which ignores permission bits: a root under a regular file cannot be created by anyone.
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    result = run_kflow("run", DEMO, "--pipeline-root", blocker / "runs", "--until", "ingest")
    assert result.returncode == 1
    (line,) = kflow_errors(result.stderr)
    assert line.startswith(f"kflow: error: cannot create the run folder {blocker / 'runs' / 'demo'}")
    assert "Traceback" not in result.stderr


def _limit_file_size(limit: int):
    def apply():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # A write past the limit fails with EFBIG instead of killing.
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def test_a_full_disk_during_an_execution_publishes_nothing_and_keeps_earlier_runs(tmp_path):
    earlier = BeamDagRunner().run(blob_pipeline(size=2000), tmp_path)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-c", RUN_TOY, str(tmp_path), "blob_pipeline", json.dumps({"size": 4_000_000})]
    result = subprocess.run(
        command, cwd=REPO, env=env, capture_output=True, text=True, timeout=120, preexec_fn=_limit_file_size(1 << 20)
    )
    assert result.returncode == 1
    assert "OSError" in result.stderr and "File too large" in result.stderr
    failed = max(tmp_path.glob("toy/*/run.json"))
    record = json.loads(failed.read_text())
    assert (record["status"], record["components"]["blob"]["status"]) == ("failed", "failed")
    assert not (failed.parent / "blob").exists()
    assert not list((failed.parent / ".staging").glob("*")), "the partial output is removed, its space freed"
    assert manifest_problem(earlier.run_dir / "blob", hashes=True) is None


@pytest.mark.slow  # ~20 s; make test keeps the full disk during an execution (above).
def test_the_real_ingest_on_a_full_disk_fails_cleanly(tmp_path):
    command = [sys.executable, "-m", "kflow.pipeline.cli.main", "run", str(DEMO), "--pipeline-root", str(tmp_path)]
    result = subprocess.run(
        [*command, "--until", "ingest"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=_limit_file_size(100_000),
    )
    assert result.returncode == 1, result.stderr[-2000:]
    (line,) = kflow_errors(result.stderr)
    assert line.startswith("kflow: error: component 'ingest' failed:")
    (run_file,) = tmp_path.glob("demo/*/run.json")
    assert not (run_file.parent / "ingest").exists()
    assert not list((run_file.parent / ".staging").glob("*"))
    # With room again, the next run ingests everything.
    again = subprocess.run([*command, "--until", "ingest"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-2000:]


def test_a_source_that_changes_while_it_is_read_publishes_nothing(tmp_path):
    source = tmp_path / "source.csv"
    source.write_text("a,b\n1,2\n")
    racing = CopySource("ingest", parameters={"source": str(source), "append": "3,4\n"})
    runner = BeamDagRunner()
    with pytest.raises(PipelineFailed, match="changed or disappeared while it was read") as failure:
        runner.run(Pipeline("toy", [racing]), tmp_path / "runs")
    assert str(source) in str(failure.value)
    assert not (failure.value.result.run_dir / "ingest").exists()
    # Unchanged while read: published, with the file's fingerprint in run.json.
    steady = CopySource("ingest", parameters={"source": str(source)})
    result = runner.run(Pipeline("toy", [steady]), tmp_path / "runs")
    (entry,) = result.record["components"]["ingest"]["data"]["files"]
    assert entry["size"] == len("a,b\n1,2\n3,4\n")


@pytest.mark.slow
def test_a_corrupt_shard_that_keeps_its_size_fails_training_with_one_line_naming_the_artifact(tmp_path, run_kflow):
    args = ("run", DEMO, "--pipeline-root", tmp_path, "--set", "trainer.epochs=1")
    assert run_kflow(*args, "--until", "ingest").returncode == 0
    (shard,) = tmp_path.glob("demo/*/ingest/examples/Split-train/*.gz")
    data = bytearray(shard.read_bytes())
    data[len(data) // 2 : len(data) // 2 + 64] = bytes(b ^ 0xFF for b in data[len(data) // 2 : len(data) // 2 + 64])
    shard.write_bytes(bytes(data))

    result = run_kflow(*args)  # Sizes match, so the cached ingest is reused: the damage shows when reading.
    assert result.returncode == 1
    (line,) = kflow_errors(result.stderr)
    # The first reader of the damaged split says it (the demo's Transform: Beam's gzip reader, not the Trainer's).
    assert "component 'transform' failed" in line
    assert f"the Examples under {shard.parent.parent} are corrupt: damaged gzip data" in line

    verified = run_kflow(*args, "--verify")  # Hashes checked: the ingest runs again and all is well.
    assert verified.returncode == 0, verified.stderr[-2000:]
    assert "content differs from its recorded SHA-256" in verified.stderr
