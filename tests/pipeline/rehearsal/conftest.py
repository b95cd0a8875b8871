"""The container tests: the kflow image (make image) run by podman, every container, network and volume a test makes
removed after it, even when it fails. Marked `containers`: left out of `make test`, run by `make test-all`."""

import pytest

from kflow.pipeline.rehearsal import podman


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "containers: runs the kflow image with podman (make image); left out of make test, run by test-all"
    )


@pytest.fixture
def engine():
    """A podman bound to this test's label; what the test created is removed after it."""
    why = podman.unavailable()
    if why:
        pytest.skip(why)
    engine = podman.Podman()
    try:
        yield engine
    finally:
        engine.remove_all()
        assert engine.containers() == []
