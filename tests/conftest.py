"""Shared test harness: paths, the real-data location, and a `kflow` subprocess helper."""

import logging
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from kflow.pipeline.dsl.scratch import scratch_dir

REPO = Path(__file__).resolve().parents[1]
SHARED_DATASETS = REPO.parent / "shared" / "datasets"

# Keep TensorFlow's C++ start-up chatter out of test output.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


@pytest.fixture(scope="session", autouse=True)
def _session_temp_folder(tmp_path_factory):
    """Every temporary file the tests and the processes they start make lands in one folder, removed when the
    session ends: a process a test kills on purpose (a cancelled run, a crashed worker) cannot remove its own (Beam's
    `beam-pipeline-temp*`, TensorFlow's `__autograph_generated_file*.py`): a session left dozens in /tmp."""
    tmp_path_factory.getbasetemp()  # pytest's own folders stay where they are (/tmp/pytest-of-<user>), kept for a look
    folder = scratch_dir("tests")  # named as kflow's scratch: `kflow gc` removes it if the session is killed
    saved = os.environ.get("TMPDIR"), tempfile.tempdir
    os.environ["TMPDIR"] = tempfile.tempdir = folder
    try:
        yield folder
    finally:
        if saved[0] is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = saved[0]
        tempfile.tempdir = saved[1]
        shutil.rmtree(folder, ignore_errors=True)


_LOGGERS = ("", "kflow")  # root, and kflow's own
_LEVELS = {name: logging.getLogger(name).level for name in _LOGGERS}  # as the session started


@pytest.fixture(autouse=True)
def _log_levels():
    """The root and `kflow` loggers' levels set back after each test to the session's: an in-process
    `main(["-q", ...])` (in a test, or a module's fixture, which runs before this one) sets both to WARNING, which hid
    the INFO lines a later test reads with caplog (the order of a pytest call decided whether it passed)."""
    yield
    for name, level in _LEVELS.items():
        logging.getLogger(name).setLevel(level)


def shared_dataset(name: str) -> Path:
    """The folder of a real dataset in ../shared/datasets, or a skip saying why it is missing."""
    path = SHARED_DATASETS / name
    if not path.is_dir():
        pytest.skip(f"real dataset {name!r} not found at {path} (see ../shared/datasets/README.md)")
    # Resolved, as kflow resolves a config's local paths: a ../shared that is a link names the same folder, so a
    # container mounts the path the compiled config names.
    return path.resolve()


@pytest.fixture
def run_kflow():
    """Runs the kflow CLI in a subprocess and returns the CompletedProcess."""

    def run(*args, timeout=900, **kwargs):
        return subprocess.run(
            [sys.executable, "-m", "kflow.pipeline.cli.main", *map(str, args)],
            capture_output=True,
            text=True,
            cwd=REPO,
            timeout=timeout,
            **kwargs,
        )

    return run
