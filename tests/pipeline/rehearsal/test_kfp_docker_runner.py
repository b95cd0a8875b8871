"""KFP's own local runner agrees: the compiled demo pipeline.yaml, loaded from its file, runs under
`kfp.local.DockerRunner` — KFP's implementation of placeholders, executor input and artifact paths, not kflow's — in
the kflow image, through podman's Docker-compatible API, to a blessed model."""

import json
import os
import resource
import subprocess
import time

import pytest

from kflow.pipeline.rehearsal.podman import LOCAL_IMAGE
from tests.conftest import REPO

pytestmark = pytest.mark.containers
DEMO = REPO / "pipeline" / "configs" / "demo.yaml"


@pytest.fixture
def podman_answers_like_docker(monkeypatch):
    """Podman's Docker-compatible API (Debian's 4.3, the stand-in for Docker here) answers 500 "does not exist in
    database: no such container" where Docker answers 404 for a container its `auto_remove` has just removed; KFP's
    runner expects docker-py's NotFound there (it streams a quick task's logs after the container may be gone). Only
    that answer is translated; every other error is raised as the API gave it."""
    import docker

    raise_for_status = docker.api.client.APIClient._raise_for_status

    def like_docker(self, response):
        try:
            raise_for_status(self, response)
        except docker.errors.APIError as error:
            if error.status_code == 500 and "no such container" in (error.explanation or ""):
                raise docker.errors.NotFound(str(error), response=response, explanation=error.explanation) from error
            raise

    monkeypatch.setattr(docker.api.client.APIClient, "_raise_for_status", like_docker)


@pytest.fixture
def docker_api(tmp_path, image, podman_answers_like_docker):
    """`podman system service` on a socket of the test's own: what DOCKER_HOST names. Containers made through that API
    get no --ulimit, so its containers.conf sets them (at the machine's hard limits), and runc with cgroupfs."""
    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    nproc = min(4096, resource.getrlimit(resource.RLIMIT_NPROC)[1] % (1 << 62))
    conf = tmp_path / "containers.conf"
    conf.write_text(
        f'[containers]\ndefault_ulimits = ["nofile={nofile}:{nofile}", "nproc={nproc}:{nproc}"]\n'
        '[engine]\nruntime = "runc"\ncgroup_manager = "cgroupfs"\n'
    )
    socket = tmp_path / "podman.sock"
    service = subprocess.Popen(
        ["podman", "system", "service", "--time=0", f"unix://{socket}"],
        env={**os.environ, "CONTAINERS_CONF": str(conf)},
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not socket.exists():
            assert service.poll() is None, service.stderr.read().decode()[-2000:]
            assert time.monotonic() < deadline, "podman's API socket never appeared"
            time.sleep(0.1)
        yield f"unix://{socket}"
    finally:
        service.terminate()
        try:
            service.wait(timeout=30)
        except subprocess.TimeoutExpired:
            service.kill()
            service.wait(timeout=30)


def test_kfp_docker_runner_runs_the_compiled_demo_in_the_kflow_image_to_a_blessed_model(
    tmp_path, docker_api, run_kflow
):
    from kfp import components, local

    package = tmp_path / "pipeline.yaml"
    # No baseline: the store is on the cluster's shared volume, which KFP's local runner does not mount.
    done = run_kflow("compile", DEMO, "-o", package, "--image", LOCAL_IMAGE, "--set", "evaluator.baseline=none")
    assert done.returncode == 0, done.stderr[-2000:]
    root = tmp_path / "kfp-root"
    root.mkdir()
    root.chmod(0o777)  # the tasks run as the image's user, 10001, and write their outputs under it
    before = subprocess.run(["podman", "ps", "-aq"], capture_output=True, text=True, check=True).stdout.split()
    os.environ["DOCKER_HOST"] = docker_api
    try:
        local.init(runner=local.DockerRunner(), pipeline_root=str(root), raise_on_error=True)
        pipeline = components.load_component_from_file(str(package))
        pipeline()
    finally:
        del os.environ["DOCKER_HOST"]
    (blessed,) = root.rglob("BLESSED")
    (metrics,) = [path for path in root.rglob("metrics.json") if path.parent.name == "evaluation"]
    assert json.loads(metrics.read_text())["accuracy"] >= 0.95
    assert blessed.stat().st_uid == 10001  # written in the image, as its user
    after = subprocess.run(["podman", "ps", "-aq"], capture_output=True, text=True, check=True).stdout.split()
    assert after == before  # KFP's runner removes its containers (auto_remove)
