"""`kflow show` of a failed run: each failed component's one-line cause and the file with its details, no traceback."""

from __future__ import annotations

import json
import subprocess
import sys
import traceback
from pathlib import Path

import pytest

from kflow.pipeline.dsl.dag import Pipeline
from kflow.pipeline.runners.beam_dag_runner import BeamDagRunner, PipelineFailed
from tests.conftest import REPO
from tests.pipeline.toy.components import Double, Produce


def show(folder: Path) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "kflow.pipeline.cli.main", "show", str(folder)]
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def failed_run(tmp_path_factory) -> Path:
    produce = Produce("produce", parameters={"value": 3})
    double = Double("double", numbers=produce.outputs["numbers"], parameters={"fail": True})
    root = tmp_path_factory.mktemp("failed")
    with pytest.raises(PipelineFailed):
        BeamDagRunner().run(Pipeline("toy", [produce, double]), root)
    (run_dir,) = (root / "toy").glob("*/run.json")
    return run_dir.parent


def test_show_says_the_cause_in_one_line_and_where_the_details_are(failed_run):
    result = show(failed_run.parent)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "Traceback" not in result.stdout
    (row,) = [line for line in lines if line.split()[:2] == ["double", "failed"]]
    assert row.endswith("RuntimeError: asked to fail")
    cause = lines.index("double failed: RuntimeError: asked to fail")
    details = Path(lines[cause + 1].removeprefix("  details: "))
    assert details == failed_run / "double.failed" / "error.log" and "asked to fail" in details.read_text()
    assert "Traceback (most recent call last):" in details.read_text()  # the whole story is there


def test_a_record_holding_a_whole_traceback_shows_its_exception_and_run_json(failed_run, tmp_path):
    """A record whose error is a traceback's text (an older kflow's, or a Beam worker's), its error log gone."""
    copied = tmp_path / "toy" / failed_run.name
    copied.mkdir(parents=True)
    record = json.loads((failed_run / "run.json").read_text())
    entry = record["components"]["double"]
    try:
        float("the third column")
    except ValueError as error:
        entry["error"] = "".join(traceback.format_exception(error))
    entry.pop("error_log", None)
    (copied / "run.json").write_text(json.dumps(record))
    result = show(copied)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stdout and 'File "' not in result.stdout
    assert "double failed: ValueError: could not convert string to float: 'the third column'" in result.stdout
    assert f"  details: {copied / 'run.json'}" in result.stdout
