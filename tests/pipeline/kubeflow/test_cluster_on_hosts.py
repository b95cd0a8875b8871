"""Every replica its own host: kflow's cluster jobs on pods with their own network stacks, addresses and names.

The harness (tests/pipeline/kubeflow/hosts.py) makes one network namespace per pod on a bridge; the STAND-IN
Trainer v2 / JobSet controllers (tests/pipeline/kubeflow/stand_in_kube.py) create the pods from the TrainJob the real
launcher submits over HTTP. The rest is real: each pod runs kflow's replica command and the Trainer, and the replicas of
`tf.distribute` talk gRPC to each other across the hosts, by the names JobSet would publish.
"""

import json

import pytest

from tests.pipeline.kubeflow.hosts import train_on_hosts as train
from tests.pipeline.kubeflow.hosts import unavailable

pytestmark = [
    pytest.mark.distributed,
    pytest.mark.skipif(bool(unavailable()), reason=f"no hosts to run on: {unavailable()}"),
]


@pytest.mark.slow  # ~75 s; make test trains MWMS across two hosts in test_faults_on_hosts.py (and kills one)
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
