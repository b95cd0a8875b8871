"""Fixtures of the cluster-on-hosts tests: real MNIST ingested once, and a stand-in cluster whose pods are hosts."""

import subprocess
import sys

import pytest

from tests.conftest import REPO, shared_dataset
from tests.pipeline.kubeflow.hosts import VirtualNetwork, pods_on_hosts
from tests.pipeline.kubeflow.stand_in_kube import StandInKubernetes


@pytest.fixture(scope="session")
def mnist_ingested(tmp_path_factory):
    """Real MNIST through kflow's ingest (Examples and Schema folders)."""
    source = shared_dataset("mnist")
    root = tmp_path_factory.mktemp("mnist-ingest")
    result = subprocess.run(
        [sys.executable, "-m", "kflow.pipeline.cli.main", "run", str(REPO / "pipeline" / "configs" / "mnist.yaml"),
         "--until", "ingest", "--pipeline-root", str(root), "--set", f"data.source.path={source}"],
        cwd=REPO, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    (run_dir,) = [path.parent for path in root.glob("mnist/*/run.json")]
    return run_dir / "ingest" / "examples", run_dir / "ingest" / "schema"


@pytest.fixture
def cluster_on_hosts(tmp_path, monkeypatch):
    with VirtualNetwork() as network, StandInKubernetes(start_pods=pods_on_hosts(network)) as server:
        monkeypatch.setenv("KUBECONFIG", str(server.kubeconfig(tmp_path / "kubeconfig")))
        monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
        monkeypatch.setenv("KFLOW_POD_NAMESPACE", "team-a")
        server.network = network
        yield server
