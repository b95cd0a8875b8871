"""Every replica its own host: kflow's cluster jobs on pods with their own network stacks, addresses and names.

The harness (tests/kubeflow/hosts.py) makes one network namespace per pod on a bridge; the STAND-IN Trainer v2 /
JobSet controllers (tests/kubeflow/stand_in_kube.py) create the pods from the TrainJob the real launcher submits
over HTTP. The rest is real: each pod runs kflow's replica command and the Trainer, and the replicas of
`tf.distribute` talk gRPC to each other across the hosts, by the names JobSet would publish.
"""

import json
import subprocess
import sys

import pytest

from kflow.pipeline.kubeflow import job_launcher
from tests.conftest import REPO, shared_dataset
from tests.kubeflow.hosts import VirtualNetwork, pods_on_hosts, unavailable
from tests.kubeflow.stand_in_kube import StandInKubernetes

pytestmark = [
    pytest.mark.distributed,
    pytest.mark.skipif(bool(unavailable()), reason=f"no hosts to run on: {unavailable()}"),
]


@pytest.fixture(scope="module")
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


def train(tmp_path, examples, schema, *parameters, replicas=("worker=2",), options=()):
    out = tmp_path / "task"
    argv = [
        "--job-prefix=train", *(f"--replica={r}" for r in replicas), "--image=registry.example/kflow:1",
        "--namespace=kubeflow", "--shared-volume-claim=kflow-shared", f"--shared-mount-path={tmp_path / 'shared'}",
        "--poll-seconds=1", *options, "--",
        "python", "-m", "kflow.pipeline.runners.kfp_entrypoint",
        "--component", "kflow.components.trainer.component:Trainer",
        "--input", f"examples={examples}", "--input", f"schema={schema}",
        "--output", f"model={out / 'model'}", "--output", f"model_run={out / 'model_run'}",
        "--parameter", "task=mnist", "--parameter", "model_name=mnist_convnet",
        *(part for parameter in parameters for part in ("--parameter", parameter)),
    ]  # fmt: skip
    return job_launcher.main(argv), out


def test_multi_worker_mirrored_trains_mnist_across_two_hosts(tmp_path, mnist_ingested, cluster_on_hosts, capfd):
    examples, schema = mnist_ingested
    code, out = train(
        tmp_path, examples, schema,
        "strategy=multi_worker_mirrored", "workers=2", "epochs=2", "steps_per_epoch=150", "batch_size=64",
    )  # fmt: skip
    err = capfd.readouterr().err
    assert code == 0, err[-4000:]
    history = json.loads((out / "model_run" / "history.json").read_text())
    accuracy = history["per_epoch"][-1]["val_accuracy"]
    print(f"MWMS, 2 worker hosts, 300 steps of 64: eval accuracy {accuracy:.4f}")
    assert history["replicas"] == 2 and accuracy > 0.9
    assert (out / "model" / "Format-Serving" / "saved_model.pb").exists()
    # The workers found each other by the names JobSet publishes, at addresses of their own hosts.
    (run,) = cluster_on_hosts.runs.values()
    config = json.loads(
        next(line for line in err.splitlines() if "[worker-1] kflow replica worker-1" in line).split("TF_CONFIG=")[1]
    )
    assert config["cluster"]["worker"] == [
        f"{run.manifest['metadata']['name']}-worker-0-{i}.{run.manifest['metadata']['name']}:2222" for i in range(2)
    ]
    assert cluster_on_hosts.network.hosts == []  # each pod's host went with it


@pytest.mark.slow  # ~1 min each; make test trains MWMS across hosts above
@pytest.mark.parametrize(
    ("layout", "replicas", "parameters"),
    [
        (
            "parameter_server",
            ("chief=1", "worker=2", "ps=1"),
            ["strategy=parameter_server", "workers=2", "parameter_servers=1"],
        ),
        ("keras_data_parallel", ("worker=2",), ["strategy=keras_data_parallel", "workers=2"]),
    ],
)
def test_the_other_cluster_layouts_train_mnist_across_hosts(
    layout, replicas, parameters, tmp_path, mnist_ingested, cluster_on_hosts, capfd
):
    examples, schema = mnist_ingested
    framework = ["--framework=jax"] if layout == "keras_data_parallel" else []
    code, out = train(
        tmp_path, examples, schema, *parameters, "epochs=2", "steps_per_epoch=150", "batch_size=64",
        replicas=replicas, options=framework,
    )  # fmt: skip
    assert code == 0, capfd.readouterr().err[-4000:]
    history = json.loads((out / "model_run" / "history.json").read_text())
    accuracy = history["per_epoch"][-1]["val_accuracy"]
    (run,) = cluster_on_hosts.runs.values()
    print(f"{layout} on {len(run.pods)} hosts, 300 steps of 64: eval accuracy {accuracy:.4f}")
    assert accuracy > 0.85 and (out / "model" / "Format-Serving" / "saved_model.pb").exists()
