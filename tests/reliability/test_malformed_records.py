"""One run.json that is not a run record (`[]`, a field of the wrong kind) is skipped, with one warning naming it,
by every reader of run records: the cache, plan, gc, runs, show, the latest-blessed baseline (issue 55 L6)."""

from __future__ import annotations

import json
import logging
import shutil

import pytest

from kflow.pipeline.app.latest_blessed import find_baseline, model_identity
from kflow.pipeline.cli.history import list_runs
from kflow.pipeline.dsl.dag import Pipeline
from kflow.pipeline.runners.beam_dag_runner import BeamDagRunner
from kflow.pipeline.runners.cache import find_cached
from kflow.pipeline.runners.gc import stale_items
from kflow.pipeline.runners.run_record import NotARunRecord, Run, earlier_runs
from tests.conftest import REPO
from tests.pipeline.toy.components import Produce

MALFORMED = {
    "an array": [],
    "no components": {"run_id": "x", "status": "succeeded"},
    "components as an array": {"components": []},
    "an execution as an array": {"components": {"produce": []}},
    "a sequence as text": {"sequence": "7", "components": {}},
    "a pid as true": {"pid": True, "status": "running", "components": {}},
    "an output of no known type": {"components": {"produce": {"outputs": {"x": {"type": "Nope", "uri": 1}}}}},
    "parameters as text": {"components": {"produce": {"status": "succeeded", "parameters": "p"}}},
    "a config's data as an array": {"metadata": {"config": {"name": "toy", "data": []}}, "components": {}},
    "data files as an object": {"components": {"produce": {"data": {"files": {"a": 1}}}}},
}


@pytest.fixture(scope="module")
def valid_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    return BeamDagRunner().run(Pipeline("toy", [Produce("produce")]), root).run


@pytest.mark.parametrize(("index", "content"), enumerate(MALFORMED.values()), ids=MALFORMED.keys())
def test_every_reader_skips_a_malformed_record_with_one_warning(valid_run, index, content, caplog):
    pipeline_dir = valid_run.run_dir.parent
    bad = pipeline_dir / f"29990101-000000-000000-bad{index}" / "run.json"  # would sort newest by name
    bad.parent.mkdir()
    bad.write_text(json.dumps(content))
    try:
        with caplog.at_level(logging.WARNING, logger="kflow"):
            assert [run.run_id for run in earlier_runs(pipeline_dir)] == [valid_run.run_id]
            execution = valid_run.executions["produce"]
            found = find_cached(pipeline_dir, "produce", execution.fingerprint)
            assert found is not None and found[1] == valid_run.run_id
            assert [row["run_id"] for row in list_runs(pipeline_dir)] == [valid_run.run_id]
            assert bad.parent not in {item.path for item in stale_items(pipeline_dir, keep_last=1)}
            identity = model_identity({"name": "toy", "data": {}})
            assert find_baseline(pipeline_dir, identity, "f")["baseline_model_uri"] is None
            with pytest.raises(NotARunRecord, match=f"^{bad}: not a run record \\(.+\\)$"):
                Run.load(bad.parent)  # `kflow show` of that folder: one line
        warnings = [record.getMessage() for record in caplog.records if record.levelno == logging.WARNING]
        (warning,) = warnings  # once, however many times it was read
        assert warning.startswith(f"skipping {bad}: not a run record (") and warning.endswith(")")
        assert "\n" not in warning
    finally:
        shutil.rmtree(bad.parent)


def test_plan_run_gc_and_runs_work_past_a_malformed_record_and_warn_once(tmp_path, run_kflow):
    """The real commands, on a pipeline folder with one real run and one run.json holding `[]`."""
    config = REPO / "pipeline" / "configs" / "iris.yaml"
    root = tmp_path / "runs"
    first = run_kflow("run", config, "--pipeline-root", root, "--until", "ingest")
    assert first.returncode == 0, first.stderr[-2000:]
    (valid,) = root.glob("iris/*/run.json")
    bad = root / "iris" / "29990101-000000-000000-bad0" / "run.json"
    bad.parent.mkdir()
    bad.write_text("[]")

    def warned_once(done):
        assert done.returncode == 0, done.stderr[-2000:]
        assert "Traceback" not in done.stderr
        (line,) = [line for line in done.stderr.splitlines() if str(bad) in line]
        assert line.endswith(f"skipping {bad}: not a run record (an array, not an object)")
        return done

    plan = warned_once(run_kflow("plan", config, "--pipeline-root", root, "--until", "ingest"))
    assert f"from run {valid.parent.name}" in plan.stdout
    warned_once(run_kflow("run", config, "--pipeline-root", root, "--until", "ingest"))
    newest = max(root.glob("iris/2026*/run.json"), key=lambda path: json.loads(path.read_text())["sequence"])
    assert json.loads(newest.read_text())["components"]["ingest"]["status"] == "cached"
    runs = warned_once(run_kflow("runs", root / "iris"))
    assert valid.parent.name in runs.stdout and newest.parent.name in runs.stdout
    warned_once(run_kflow("gc", root, "--keep-last", "1", "--dry-run"))
    warned_once(run_kflow("gc", root))
    assert bad.is_file(), "gc removes only what it can tell no run needs"
    show = run_kflow("show", bad.parent)
    assert show.returncode == 2 and show.stderr.strip().endswith(f"{bad}: not a run record (an array, not an object)")
