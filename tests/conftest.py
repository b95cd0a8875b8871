"""Shared test harness: paths, the real-data location, and a `kflow` subprocess helper."""

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATASETS = REPO.parent / "shared" / "datasets"

# Keep TensorFlow's C++ start-up chatter out of test output.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


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
