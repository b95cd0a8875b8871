"""Shared test harness: paths, the real-data location, and a `kflow` subprocess helper."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATASETS = REPO.parent / "shared" / "datasets"

# Keep TensorFlow's C++ start-up chatter out of test output.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


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
