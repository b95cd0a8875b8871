"""A real disk that fills during a real ingest (issue 55 M3): Beam re-raises the OSError(ENOSPC) of its writer as a
RuntimeError, which the check for a full disk used to miss, so the partial shard was kept in `ingest.failed/`, the
disk stayed full, run.json stayed `running` and gc found nothing to remove."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.conftest import REPO
from tests.reliability.big_csv import KflowRun, big_csv_config
from tests.reliability.tmpfs import mounted_tmpfs


@pytest.fixture
def tiny_disk(tmp_path):
    """A real 64 KiB file system (tmpfs), mounted for the test and unmounted after, whatever happens."""
    with mounted_tmpfs(tmp_path / "tiny-disk", "64k") as mount:
        yield mount


def test_a_disk_filled_by_an_ingest_gets_its_space_back_and_the_run_says_failed_and_where(tmp_path, tiny_disk):
    config = big_csv_config(tmp_path, repeats=100)  # 2.1 MB of CSV: some 90 KB of Examples, more than the disk
    run = KflowRun(config, tiny_disk, "--until", "ingest")
    try:
        code = run.wait(timeout=300)
    finally:
        run.kill()
    assert code == 1, run.stderr[-3000:]
    (run_file,) = tiny_disk.glob("big/*/run.json")
    run_dir = run_file.parent
    # One line: the disk is full, which file system, what was being written, and the error log.
    (line,) = [line for line in run.stderr.splitlines() if line.startswith("kflow:")]
    assert line == (
        f"kflow: error: component 'ingest' failed: OSError: [Errno 28] No space left on device: the file system at "
        f"{tiny_disk} is full (writing {run_dir / 'ingest'}); its partial output is removed "
        f"[{run_dir / 'ingest.failed' / 'error.log'}]"
    )
    # The partial output is gone, the space given back; the error log (a few KB) is kept.
    assert sorted(path.name for path in (run_dir / "ingest.failed").iterdir()) == ["error.log"]
    assert (run_dir / "ingest.failed" / "error.log").read_text().startswith("component: ingest\nerror: OSError:")
    assert not (run_dir / "ingest").exists() and not list((run_dir / ".staging").glob("*"))
    assert shutil.disk_usage(tiny_disk).used < 32 * 1024
    # The record says so: failed, not left `running`.
    record = json.loads(run_file.read_text())
    assert (record["status"], record["components"]["ingest"]["status"]) == ("failed", "failed")
    assert record["components"]["ingest"]["error"] == line.split(" failed: ", 1)[1].rsplit(" [", 1)[0]
    # Nothing was left for gc to find (its temp folder one of its own, not this machine's other scratch).
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    gc = subprocess.run(
        [sys.executable, "-m", "kflow.pipeline.cli.main", "gc", str(tiny_disk), "--dry-run"],
        cwd=REPO, capture_output=True, text=True, timeout=120, env={**os.environ, "TMPDIR": str(scratch)},
    )  # fmt: skip
    assert gc.returncode == 0 and gc.stdout.strip().splitlines() == ["0 item(s) to remove"], gc.stdout + gc.stderr
