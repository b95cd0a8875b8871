"""TFJob rendering and following, against STAND-IN Kubernetes APIs (objects with the few methods used)."""

import json
import logging
from pathlib import Path
from types import SimpleNamespace

import pytest

from kflow.components.trainer import Trainer
from kflow.pipeline.dsl.artifacts import Examples, Schema
from kflow.pipeline.dsl.component import Channel
from kflow.pipeline.kubeflow.tfjob import (
    DEFAULT_TEMPLATE,
    TFJobFailed,
    TFJobRequest,
    create_tfjob,
    operator_jax_environment,
    operator_tf_config,
    render_tfjob,
    tfjob_replicas,
    wait_for_tfjob,
    writer_pod,
)
from kflow.pipeline.kubeflow.tfjob_launcher import replica_command, task_paths
from tests.kubeflow.operator_models import operator_model_differences


def trainer(strategy: str, workers: int, parameter_servers: int) -> Trainer:
    channels = {"examples": Channel("ingest", "examples", Examples), "schema": Channel("ingest", "schema", Schema)}
    parameters = {"strategy": strategy, "workers": workers, "parameter_servers": parameter_servers}
    return Trainer("train", parameters=parameters, **channels)


def replicas(strategy: str, workers: int, parameter_servers: int) -> dict[str, int]:
    """The TFJob replicas of a Trainer node, from the roles its strategy declares (as the local launcher starts)."""
    return tfjob_replicas(trainer(strategy, workers, parameter_servers).cluster_replicas())


ENTRYPOINT = [
    *(
        "python",
        "-m",
        "kflow.pipeline.runners.kfp_entrypoint",
        "--component",
        "kflow.components.trainer.component:Trainer",
    ),
    *("--input", "examples=/gcs/b/ingest/examples", "--output", "model=/gcs/b/train/model"),
    *("--parameter", "epochs=3"),
]


def request(**overrides):
    command, _, _ = replica_command(ENTRYPOINT, Path("/mnt/kflow-shared/train-1"))
    values = dict(
        name="train-1",
        namespace="team-a",
        image="registry.example/kflow:0.1.0",
        command=command,
        replicas=replicas("multi_worker_mirrored", 3, 0),
        resources={"requests": {"cpu": "2", "memory": "4Gi"}, "limits": {"nvidia.com/gpu": 1}},
    )
    return TFJobRequest(**{**values, **overrides})


def test_the_template_is_a_tfjob_of_the_training_operator():
    manifest = render_tfjob(request())
    assert DEFAULT_TEMPLATE.is_file()
    assert manifest["apiVersion"] == "kubeflow.org/v1" and manifest["kind"] == "TFJob"
    assert manifest["metadata"] == {
        "name": "train-1",
        "namespace": "team-a",
        "labels": {"app.kubernetes.io/part-of": "kflow"},
    }


@pytest.mark.parametrize(
    ("strategy", "workers", "ps", "expected", "writer"),
    [
        ("multi_worker_mirrored", 2, 1, {"Worker": 2}, "train-1-worker-0"),
        ("multi_worker_mirrored", 4, 1, {"Worker": 4}, "train-1-worker-0"),
        ("parameter_server", 2, 1, {"Chief": 1, "Worker": 2, "PS": 1}, "train-1-chief-0"),
        ("parameter_server", 3, 2, {"Chief": 1, "Worker": 3, "PS": 2}, "train-1-chief-0"),
    ],
)
def test_replicas_are_laid_out_like_the_trainers_local_cluster(strategy, workers, ps, expected, writer):
    layout = replicas(strategy, workers, ps)
    manifest = render_tfjob(request(replicas=layout))
    assert {kind: spec["replicas"] for kind, spec in manifest["spec"]["tfReplicaSpecs"].items()} == expected
    assert writer_pod("train-1", layout) == writer


@pytest.mark.parametrize(
    ("strategy", "workers", "ps"),
    [
        ("multi_worker_mirrored", 2, 0),
        ("parameter_server", 2, 1),
        ("parameter_server", 3, 2),
        ("keras_data_parallel", 2, 0),
    ],
)
def test_rendered_jobs_are_what_the_training_operators_models_accept(strategy, workers, ps):
    node = trainer(strategy, workers, ps)
    settings = {"nodeSelector": {"pool": "gpu"}, "tolerations": [{"key": "gpu", "operator": "Exists"}]}
    manifest = render_tfjob(
        request(
            replicas=tfjob_replicas(node.cluster_replicas()),
            kind=node.cluster_job_kind(),
            pod_settings={role: settings for role in tfjob_replicas(node.cluster_replicas())},
        )
    )
    assert operator_model_differences(manifest) == []


def test_the_operator_models_check_catches_unknown_fields_and_wrong_types():
    manifest = render_tfjob(request())
    manifest["spec"]["runPolicy"]["cleanPodPolcy"] = "Running"
    (container,) = manifest["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"]
    container["ports"] = [{"containerPort": 2222, "protocl": "TCP"}]
    assert operator_model_differences(manifest) == [
        "/spec/runPolicy/cleanPodPolcy: not a field of the operator's API",
        "/spec/tfReplicaSpecs/Worker/template/spec/containers[0]/ports[0]/protocl: not a field of the operator's API",
    ]
    del container["name"]
    with pytest.raises(ValueError, match="`name`"):
        operator_model_differences(manifest)


def test_every_replica_runs_the_entrypoint_in_the_image_with_the_resources():
    manifest = render_tfjob(request(replicas=replicas("parameter_server", 2, 1), service_account="pipeline-runner"))
    assert set(manifest["spec"]["tfReplicaSpecs"]) == {"Chief", "Worker", "PS"}
    for spec in manifest["spec"]["tfReplicaSpecs"].values():
        pod = spec["template"]["spec"]
        (container,) = pod["containers"]
        assert container["name"] == "tensorflow"
        assert container["image"] == "registry.example/kflow:0.1.0"
        assert container["command"][:3] == ["python", "-m", "kflow.pipeline.runners.kfp_entrypoint"]
        assert "examples=/mnt/kflow-shared/train-1/inputs/examples" in container["command"]
        # Each pod writes to a folder of its own; Kubernetes expands $(POD_NAME) from the env below.
        assert "model=/mnt/kflow-shared/train-1/outputs/$(POD_NAME)/model" in container["command"]
        assert container["env"][0]["name"] == "POD_NAME"
        assert container["resources"] == {"requests": {"cpu": "2", "memory": "4Gi"}, "limits": {"nvidia.com/gpu": 1}}
        assert pod["serviceAccountName"] == "pipeline-runner"
        assert pod["volumes"][0]["persistentVolumeClaim"]["claimName"] == "kflow-shared"
        assert container["volumeMounts"][0]["mountPath"] == "/mnt/kflow-shared"
        assert spec["restartPolicy"] == "Never"


def test_tf_config_as_the_operator_derives_it():
    manifest = render_tfjob(request())
    assert operator_tf_config(manifest, "Worker", 1) == {
        "cluster": {
            "worker": [
                "train-1-worker-0.team-a.svc:2222",
                "train-1-worker-1.team-a.svc:2222",
                "train-1-worker-2.team-a.svc:2222",
            ]
        },
        "task": {"type": "worker", "index": 1},
        "environment": "cloud",
    }
    ps = render_tfjob(request(replicas=replicas("parameter_server", 2, 1)))
    config = operator_tf_config(ps, "Chief", 0)
    assert config["cluster"] == {
        "chief": ["train-1-chief-0.team-a.svc:2222"],
        "worker": ["train-1-worker-0.team-a.svc:2222", "train-1-worker-1.team-a.svc:2222"],
        "ps": ["train-1-ps-0.team-a.svc:2222"],
    }
    assert config["task"] == {"type": "chief", "index": 0}
    json.dumps(config)  # TF_CONFIG is this, as JSON.
    with pytest.raises(ValueError, match="no Evaluator"):
        operator_tf_config(manifest, "Evaluator", 0)
    # A sidecar evaluator is an Evaluator replica, left out of the cluster the trainers form.
    node = Trainer(
        "train",
        parameters={"strategy": "multi_worker_mirrored", "workers": 2, "sidecar_evaluator": True},
        examples=Channel("ingest", "examples", Examples),
        schema=Channel("ingest", "schema", Schema),
    )
    with_evaluator = render_tfjob(request(replicas=tfjob_replicas(node.cluster_replicas())))
    assert set(with_evaluator["spec"]["tfReplicaSpecs"]) == {"Worker", "Evaluator"}
    evaluator = operator_tf_config(with_evaluator, "Evaluator", 0)
    assert set(evaluator["cluster"]) == {"worker"} and evaluator["task"] == {"type": "evaluator", "index": 0}


def test_single_process_strategies_train_in_the_tasks_own_pod():
    assert trainer("mirrored", 2, 0).cluster_replicas() == {}
    assert trainer("multi_worker_mirrored", 1, 0).cluster_replicas() == {}
    with pytest.raises(ValueError, match="parameter_servers ≥ 1"):
        trainer("parameter_server", 2, 0).cluster_replicas()
    with pytest.raises(ValueError, match="roles must map"):
        tfjob_replicas({"master": 1})


@pytest.mark.parametrize("strategy", ["keras_data_parallel", "keras_model_parallel", "jax_data_parallel"])
def test_jax_strategies_run_as_a_jaxjob_whose_environment_the_trainer_reads(strategy, monkeypatch):
    from kflow.components.trainer.launcher import cluster_spec, process_environment
    from kflow.components.trainer.strategies.jax_process import JaxProcess

    node = trainer(strategy, 3, 0)
    assert node.cluster_job_kind() == "JAXJob"
    manifest = render_tfjob(request(replicas=tfjob_replicas(node.cluster_replicas()), kind="JAXJob"))
    assert (manifest["apiVersion"], manifest["kind"]) == ("kubeflow.org/v1", "JAXJob")
    assert "tfReplicaSpecs" not in manifest["spec"]
    (worker,) = manifest["spec"]["jaxReplicaSpecs"].values()
    assert worker["replicas"] == 3
    (container,) = worker["template"]["spec"]["containers"]
    assert container["name"] == "jax"  # the name the operator looks for
    assert {"name": "KERAS_BACKEND", "value": "jax"} in container["env"]
    assert container["ports"] == [{"name": "jaxjob-port", "containerPort": 6666}]
    assert writer_pod("train-1", {"Worker": 3}) == "train-1-worker-0"
    # What the operator injects is what the Trainer's JAX processes read (and what the local launcher sets).
    environment = operator_jax_environment(manifest, 2)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    assert JaxProcess.from_environment() == JaxProcess(count=3, index=2, coordinator="train-1-worker-0:6666")
    local = process_environment(strategy, cluster_spec(strategy, 3, 0), "worker", 2)
    assert set(environment) < set(local) and local["KERAS_BACKEND"] == "jax"
    with pytest.raises(ValueError, match="Worker replicas only"):
        request(replicas={"Chief": 1, "Worker": 2}, kind="JAXJob")


def test_tensorflow_strategies_stay_tfjobs():
    assert trainer("multi_worker_mirrored", 2, 0).cluster_job_kind() == "TFJob"
    assert trainer("parameter_server", 2, 1).cluster_job_kind() == "TFJob"


def test_bad_requests_are_refused():
    with pytest.raises(ValueError, match="replicas"):
        request(replicas={"Master": 1})
    with pytest.raises(ValueError, match="command"):
        request(command=[])


def test_the_launcher_moves_artifacts_onto_the_shared_volume():
    command, inputs, outputs = replica_command(ENTRYPOINT, Path("/mnt/s/job"))
    assert inputs == {"examples": Path("/mnt/s/job/inputs/examples")}
    assert outputs == {"model": "model"}
    # Every replica shares one working dir on the volume: the chief's checkpoints, for the sidecar and for resumes.
    assert command[-3:] == ["--parameter", "epochs=3", "--working-dir=/mnt/s/job/work"]
    assert task_paths(ENTRYPOINT, "--output") == {"model": Path("/gcs/b/train/model")}


class StandInKubernetes:
    """A STAND-IN for kubernetes.client CustomObjectsApi + CoreV1Api: replays a script of job states."""

    def __init__(self, states, pod_phases, logs=None):
        self.states = list(states)
        self.pod_phases = pod_phases
        self.logs = logs or {}
        self.created = []
        self.polls = 0

    def create_namespaced_custom_object(self, group, version, namespace, plural, body):
        self.created.append((group, version, namespace, plural, body))
        return body

    def get_namespaced_custom_object(self, group, version, namespace, plural, name):
        assert (group, version, plural) == ("kubeflow.org", "v1", "tfjobs")
        state = self.states[min(self.polls, len(self.states) - 1)]
        self.polls += 1
        conditions = [{"type": "Created", "status": "True"}]
        if state:
            conditions.append({"type": state, "status": "True", "message": f"TFJob {name} is {state.lower()}."})
        return {"metadata": {"name": name}, "status": {"conditions": conditions}}

    def list_namespaced_pod(self, namespace, label_selector):
        assert label_selector == "training.kubeflow.org/job-name=train-1"
        phases = self.pod_phases[min(self.polls, len(self.pod_phases)) - 1]
        return SimpleNamespace(
            items=[
                SimpleNamespace(metadata=SimpleNamespace(name=name), status=SimpleNamespace(phase=phase))
                for name, phase in phases.items()
            ]
        )

    def read_namespaced_pod_log(self, name, namespace, tail_lines):
        if name not in self.logs:
            raise RuntimeError("container not started")
        return self.logs[name]


def follow(api, timeout=100.0):
    now = [0.0]
    return wait_for_tfjob(
        api,
        api,
        "train-1",
        "team-a",
        timeout=timeout,
        poll_seconds=10,
        clock=lambda: now[0],
        sleep=lambda s: now.__setitem__(0, now[0] + s),
    )


def test_waits_until_the_job_succeeds_and_logs_pods_and_their_logs(caplog):
    api = StandInKubernetes(
        [None, None, "Succeeded"],
        [{"train-1-chief-0": "Pending"}, {"train-1-chief-0": "Running"}, {"train-1-chief-0": "Succeeded"}],
        logs={"train-1-chief-0": "epoch 3/3 accuracy 0.97"},
    )
    create_tfjob(api, render_tfjob(request()))
    with caplog.at_level(logging.INFO, logger="kflow"):
        job = follow(api)
    assert api.created[0][2] == "team-a" and api.created[0][4]["kind"] == "TFJob"
    assert api.polls == 3
    assert job["status"]["conditions"][-1]["type"] == "Succeeded"
    assert "pod train-1-chief-0 is Running" in caplog.text
    assert "epoch 3/3 accuracy 0.97" in caplog.text


def test_a_failed_job_raises_naming_the_failed_pods(caplog):
    api = StandInKubernetes(
        [None, "Failed"],
        [
            {"train-1-chief-0": "Running", "train-1-worker-0": "Running"},
            {"train-1-chief-0": "Running", "train-1-worker-0": "Failed"},
        ],
        logs={"train-1-worker-0": "OOMKilled"},
    )
    with caplog.at_level(logging.INFO, logger="kflow"), pytest.raises(TFJobFailed, match="failed") as failure:
        follow(api)
    assert "train-1-worker-0" in str(failure.value)
    assert "OOMKilled" in caplog.text
    assert "no log: container not started" in caplog.text


def test_a_job_that_never_finishes_times_out():
    api = StandInKubernetes([None], [{"train-1-chief-0": "Pending"}])
    with pytest.raises(TFJobFailed, match="did not finish within 30 s"):
        follow(api, timeout=30)
    assert api.polls == 4
