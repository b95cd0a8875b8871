"""The Training Operator v1 backend (`kubeflow.training: tfjob`): TFJobs and JAXJobs, checked with its models."""

import copy
import json

import pytest

from kflow.pipeline.kubeflow.cluster_job import ClusterJob
from kflow.pipeline.kubeflow.job_launcher import shared_command, task_paths
from kflow.pipeline.kubeflow.replica import replica_command
from kflow.pipeline.kubeflow.replica_env import replica_from_environment
from kflow.pipeline.kubeflow.tfjob import (
    operator_jax_environment,
    operator_tf_config,
    render_network_policy,
    render_tfjob,
    tfjob_state,
)
from tests.pipeline.kubeflow.api_models import model_differences
from tests.pipeline.kubeflow.pod_security import restricted_violations
from tests.pipeline.kubeflow.test_trainjob_env import cluster_job, trainer_node

ENTRYPOINT = [
    *("python", "-m", "kflow.pipeline.runners.kfp_entrypoint"),
    *("--component", "kflow.components.trainer.component:Trainer"),
    *("--input", "examples=/gcs/b/ingest/examples", "--output", "model=/gcs/b/train/model"),
    *("--parameter", "epochs=3"),
]


def tfjob(strategy="multi_worker_mirrored", workers=3, ps=0, evaluator=False, **changes):
    job = cluster_job(strategy, workers, ps, evaluator)
    return render_tfjob(ClusterJob(**{**job.__dict__, **changes}))


@pytest.mark.parametrize(
    ("strategy", "workers", "ps", "expected"),
    [
        ("multi_worker_mirrored", 2, 0, {"Worker": 2}),
        ("parameter_server", 2, 1, {"Chief": 1, "Worker": 2, "PS": 1}),
        ("parameter_server", 3, 2, {"Chief": 1, "Worker": 3, "PS": 2}),
        ("keras_data_parallel", 2, 0, {"Worker": 2}),
    ],
)
def test_rendered_jobs_are_laid_out_like_the_local_cluster_and_pass_the_operators_models(
    strategy, workers, ps, expected
):
    settings = {"nodeSelector": {"pool": "gpu"}, "tolerations": [{"key": "gpu", "operator": "Exists"}]}
    job = cluster_job(strategy, workers, ps)
    manifest = render_tfjob(ClusterJob(**{**job.__dict__, "pod_settings": {role: settings for role in job.replicas}}))
    specs = manifest["spec"]["jaxReplicaSpecs" if strategy == "keras_data_parallel" else "tfReplicaSpecs"]
    assert {kind: spec["replicas"] for kind, spec in specs.items()} == expected
    assert model_differences(manifest) == []
    for spec in specs.values():
        assert restricted_violations(spec["template"]["spec"]) == []
    assert model_differences(render_network_policy(job)) == []


def test_the_operator_models_check_catches_unknown_fields_and_wrong_types():
    manifest = tfjob()
    manifest["spec"]["runPolicy"]["cleanPodPolcy"] = "Running"
    (container,) = manifest["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"]
    container["ports"] = [{"containerPort": 2222, "protocl": "TCP"}]
    assert model_differences(manifest) == [
        "/spec/runPolicy/cleanPodPolcy: not a field of the API",
        "/spec/tfReplicaSpecs/Worker/template/spec/containers[0]/ports[0]/protocl: not a field of the API",
    ]
    del container["name"]
    with pytest.raises(ValueError, match="`name`"):
        model_differences(manifest)


def test_every_replica_runs_the_replica_command_least_privileged_with_the_resources():
    resources = {"resources": {"requests": {"cpu": "2", "memory": "4Gi"}, "limits": {"nvidia.com/gpu": 1}}}
    job = cluster_job("parameter_server", 2, 1)
    manifest = render_tfjob(ClusterJob(**{**job.__dict__, "pod_settings": {"worker": resources}}))
    for kind, spec in manifest["spec"]["tfReplicaSpecs"].items():
        pod = spec["template"]["spec"]
        (container,) = pod["containers"]
        assert container["name"] == "tensorflow" and container["image"] == "registry.example/kflow:1"
        assert container["command"] == ["python", "-m", "kflow.pipeline.kubeflow.replica"]
        assert json.loads(container["env"][0]["value"]) == job.entrypoint
        assert container["resources"] == (resources["resources"] if kind == "Worker" else {})
        assert pod["serviceAccountName"] == "kflow-training" and pod["automountServiceAccountToken"] is False
        assert pod["volumes"][0]["persistentVolumeClaim"]["claimName"] == "kflow-shared"
        assert spec["restartPolicy"] == "Never"
    assert manifest["spec"]["runPolicy"] == {
        "cleanPodPolicy": "Running",
        "backoffLimit": 0,
        "activeDeadlineSeconds": 86400,
    }
    restarting = tfjob(max_restarts=2)
    assert restarting["spec"]["runPolicy"]["backoffLimit"] == 2
    assert restarting["spec"]["tfReplicaSpecs"]["Worker"]["restartPolicy"] == "ExitCode"


def test_the_replica_reads_the_tf_config_the_operator_derives():
    manifest = tfjob()
    config = operator_tf_config(manifest, "Worker", 1)
    assert config["cluster"] == {
        "worker": [f"train-1a2b3c4d-worker-{i}.team-a.svc:2222" for i in range(3)],
    }
    pod = {"TF_CONFIG": json.dumps(config), "KFLOW_ENTRYPOINT": json.dumps(["python", "out={replica}"])}
    replica, command = replica_command(pod)
    assert (replica.name, replica.environment, command) == ("worker-1", {}, ["python", "out=worker-1"])
    ps = tfjob("parameter_server", 2, 1, evaluator=True)
    assert set(operator_tf_config(ps, "Evaluator", 0)["cluster"]) == {"chief", "worker", "ps"}
    with pytest.raises(ValueError, match="no Master"):
        operator_tf_config(ps, "Master", 0)


def test_jax_strategies_run_as_a_jaxjob_whose_environment_the_trainer_reads(monkeypatch):
    from kflow.components.trainer.launcher import cluster_spec, process_environment
    from kflow.components.trainer.strategies.jax_process import JaxProcess

    manifest = tfjob("jax_data_parallel", 3)
    assert (manifest["apiVersion"], manifest["kind"]) == ("kubeflow.org/v1", "JAXJob")
    (worker,) = manifest["spec"]["jaxReplicaSpecs"].values()
    (container,) = worker["template"]["spec"]["containers"]
    assert container["name"] == "jax" and {"name": "KERAS_BACKEND", "value": "jax"} in container["env"]
    assert container["ports"] == [{"name": "jaxjob-port", "containerPort": 6666}]
    environment = operator_jax_environment(manifest, 2)
    assert replica_from_environment(environment).name == "worker-2"
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    assert JaxProcess.from_environment() == JaxProcess(count=3, index=2, coordinator="train-1a2b3c4d-worker-0:6666")
    local = process_environment("jax_data_parallel", cluster_spec("jax_data_parallel", 3, 0), "worker", 2)
    assert set(environment) < set(local) and local["KERAS_BACKEND"] == "jax"


def test_single_process_strategies_train_in_the_tasks_own_pod():
    assert trainer_node("mirrored", 2).cluster_replicas() == {}
    assert trainer_node("multi_worker_mirrored", 1).cluster_replicas() == {}
    with pytest.raises(ValueError, match="parameter_servers ≥ 1"):
        trainer_node("parameter_server", 2, 0).cluster_replicas()
    assert trainer_node("multi_worker_mirrored", 2).cluster_framework() == "tensorflow"
    assert trainer_node("keras_data_parallel", 2).cluster_framework() == "jax"


def test_bad_requests_are_refused():
    job = cluster_job("multi_worker_mirrored", 2)
    for change, message in (
        ({"replicas": {"master": 1}}, "replicas must map"),
        ({"entrypoint": []}, "entrypoint"),
        ({"framework": "jax", "replicas": {"chief": 1, "worker": 2}}, "workers only"),
        ({"name": "Train_1"}, "DNS label"),
        ({"pod_settings": {"ps": {}}}, "not roles"),
    ):
        with pytest.raises(ValueError, match=message):
            ClusterJob(**{**copy.deepcopy(job.__dict__), **change})


def test_the_launcher_moves_artifacts_onto_the_shared_volume():
    from pathlib import Path

    command, inputs, outputs = shared_command(ENTRYPOINT, Path("/mnt/s/job"))
    assert inputs == {"examples": Path("/mnt/s/job/inputs/examples")}
    assert outputs == {"model": "model"}
    assert "model=/mnt/s/job/outputs/{replica}/model" in command
    # Every replica shares one working dir on the volume: the chief's checkpoints, for the sidecar and for resumes.
    assert command[-3:] == ["--parameter", "epochs=3", "--working-dir=/mnt/s/job/work"]
    assert task_paths(ENTRYPOINT, "--output") == {"model": Path("/gcs/b/train/model")}


def test_the_state_of_a_tfjob_from_its_conditions():
    running = {"status": {"conditions": [{"type": "Created", "status": "True"}, {"type": "Running", "status": "True"}]}}
    assert tfjob_state(running) == (None, "")
    failed = {"status": {"conditions": [{"type": "Failed", "status": "True", "reason": "TFJobFailed", "message": "x"}]}}
    assert tfjob_state(failed) == ("Failed", "TFJobFailed: x")
