"""`kflow gc` removes exactly what no run needs, never what a live run uses; old runs by a keep policy."""

import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import pytest

from kflow.pipeline.cli.main import main
from kflow.pipeline.dsl.dag import Pipeline
from kflow.pipeline.runners.beam_dag_runner import BeamDagRunner
from tests.pipeline.toy.components import Produce


def dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def fake_run(pipeline_dir, name, pid, staged=True):
    run_dir = pipeline_dir / name
    (run_dir / ".staging" / "produce-1a2b").mkdir(parents=True)
    (run_dir / ".staging" / "produce-1a2b" / "value.txt").write_text("half")
    record = {"pipeline": "toy", "run_id": name, "sequence": 0, "host": os.uname().nodename, "pid": pid}
    (run_dir / "run.json").write_text(json.dumps({**record, "status": "running", "components": {}}))
    return run_dir / ".staging"


@pytest.fixture
def planted(tmp_path, monkeypatch):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    root = tmp_path / "runs"
    run = BeamDagRunner().run(Pipeline("toy", [Produce("produce")]), root).run
    pipeline_dir = root / "toy"
    fingerprint = run.executions["produce"].fingerprint
    old = time.time() - 2 * 86400
    for name in ("unheld.lock", "held.lock", "young.lock"):
        (pipeline_dir / ".locks" / name).touch()
    for name in ("unheld.lock", "held.lock"):
        os.utime(pipeline_dir / ".locks" / name, (old, old))
    held = open(pipeline_dir / ".locks" / "held.lock", "a")  # noqa: SIM115 - held for the test's length
    fcntl.flock(held, fcntl.LOCK_EX)
    stale = {
        fake_run(pipeline_dir, "20260101-000000-000000-dead", dead_pid()),
        scratch / f"kflow-ingest-{dead_pid()}-x1",
        pipeline_dir / ".work" / f"produce-{fingerprint}",
        pipeline_dir / ".locks" / "unheld.lock",
    }
    kept = {
        fake_run(pipeline_dir, "20260101-000000-000000-live", os.getpid()),
        scratch / f"kflow-ingest-{os.getpid()}-x2",
        scratch / "kflow-no-owner",
        pipeline_dir / ".work" / "produce-0123456789abcdef0123",  # an execution that never finished: resumable
        pipeline_dir / ".locks" / "held.lock",
        pipeline_dir / ".locks" / "young.lock",
    }
    for path in stale | kept:
        if not path.exists():
            path.mkdir(parents=True)
    yield pipeline_dir, stale, kept
    held.close()


def test_gc_lists_exactly_the_stale_items_then_removes_them_and_nothing_live(planted, capsys):
    pipeline_dir, stale, kept = planted
    assert main(["gc", str(pipeline_dir), "--dry-run"]) == 0
    listed = {line.split("  (")[0].removeprefix("would remove ") for line in capsys.readouterr().out.splitlines()[:-1]}
    assert listed == {str(path) for path in stale}
    assert all(path.exists() for path in stale | kept)
    assert main(["gc", str(pipeline_dir)]) == 0
    assert not any(path.exists() for path in stale) and all(path.exists() for path in kept)
    assert (pipeline_dir.parent / "toy").is_dir() and list(pipeline_dir.glob("*/run.json"))


def test_keep_last_keeps_the_newest_and_the_runs_they_reuse(tmp_path, capsys):
    root = tmp_path / "runs"
    pipeline = Pipeline("toy", [Produce("produce")])
    runs = [BeamDagRunner().run(pipeline, root).run for _ in range(4)]  # the later three reuse the first's output
    assert main(["gc", str(root), "--keep-last", "2"]) == 0
    left = sorted(path.parent.name for path in (root / "toy").glob("*/run.json"))
    assert left == sorted([runs[0].run_id, runs[2].run_id, runs[3].run_id])  # run 1: its outputs are reused
    again = BeamDagRunner().run(pipeline, root).run
    assert again.executions["produce"].status == "cached"


def test_keep_last_keeps_a_run_whose_model_a_kept_run_names_as_its_baseline(tmp_path, capsys):
    """A kept run's evaluation names an older run's model as its baseline (a parameter, not a cached output: the
    re-run of a blessed model keeps what it was blessed against). gc --keep-last 1 removed that run and the next
    evaluate failed (a user trial, on iris): a run a kept run names is kept as one it reuses."""
    root = tmp_path / "runs"
    runs = [BeamDagRunner().run(Pipeline("toy", [Produce("produce", parameters={"value": v})]), root).run
            for v in (1, 2, 3)]  # fmt: skip
    newest = runs[-1].run_dir / "run.json"
    record = json.loads(newest.read_text())
    record["components"]["produce"]["parameters"]["baseline_model_uri"] = str(runs[0].run_dir / "train" / "model")
    newest.write_text(json.dumps(record))
    assert main(["gc", str(root), "--keep-last", "1"]) == 0
    left = sorted(path.parent.name for path in (root / "toy").glob("*/run.json"))
    assert left == sorted([runs[0].run_id, runs[2].run_id])  # the named one kept, the middle one removed


def test_a_record_written_by_a_newer_kflow_does_not_break_later_runs(tmp_path):
    root = tmp_path / "runs"
    pipeline = Pipeline("toy", [Produce("produce")])
    first = BeamDagRunner().run(pipeline, root).run
    record = json.loads((first.run_dir / "run.json").read_text())
    record["from_the_future"] = {"x": 1}
    record["components"]["produce"]["outputs"]["numbers"]["checksum"] = "abc"
    (first.run_dir / "run.json").write_text(json.dumps(record))
    assert BeamDagRunner().run(pipeline, root).run.executions["produce"].status == "cached"


def test_kflow_run_sweeps_its_pipelines_stale_staging(tmp_path, run_kflow):
    from tests.conftest import REPO

    config = tmp_path / "toy.yaml"
    shutil.copyfile(REPO / "pipeline" / "configs" / "demo.yaml", config)
    staging = fake_run(tmp_path / "runs" / "demo", "20260101-000000-000000-dead", dead_pid())
    result = run_kflow("run", config, "--until", "ingest", "--pipeline-root", tmp_path / "runs")
    assert result.returncode == 0, result.stderr[-2000:]
    assert not staging.exists() and "removed the unpublished outputs of 1 earlier run(s)" in result.stderr
