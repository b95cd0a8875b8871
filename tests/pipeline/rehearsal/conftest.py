"""The container tests: the kflow image (make image) run by podman, every container, network and volume a test makes
removed after it, even when it fails. Marked `containers`: left out of `make test`, run by `make test-all`."""

import subprocess

import pytest

from kflow.pipeline.rehearsal import podman
from tests.conftest import REPO


@pytest.fixture(scope="session")
def image():
    """The image, built again (make image: ~15 s when only the code changed) when it holds other code than this
    checkout: the tasks must run the code the pipeline was compiled from."""
    why = podman.unavailable()
    if why:
        pytest.skip(why)
    if podman.image_code_digest(podman.LOCAL_IMAGE) != podman.code_digest(REPO):
        built = subprocess.run([str(REPO / "deploy" / "build-image.sh")], capture_output=True, text=True, timeout=1800)
        assert built.returncode == 0, built.stderr[-3000:]
    return podman.LOCAL_IMAGE


@pytest.fixture
def engine(image):
    """A podman bound to this test's label; what the test created is removed after it."""
    engine = podman.Podman()
    try:
        yield engine
    finally:
        engine.remove_all()
        assert engine.containers() == []
