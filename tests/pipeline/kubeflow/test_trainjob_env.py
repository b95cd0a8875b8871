"""Each TrainJob pod derives what tf.distribute (or JAX) needs from the variables Trainer v2 and JobSet give it.

The pods come from the STAND-IN Trainer/JobSet controllers (tests/pipeline/kubeflow/stand_in_trainer.py), which
build them from kflow's rendered runtime and TrainJob as the v2.3.0 controllers' code does.
"""

import json

import pytest

from kflow.components.trainer import Trainer
from kflow.pipeline.dsl.artifacts import Examples, Schema
from kflow.pipeline.dsl.component import Channel
from kflow.pipeline.kubeflow.cluster_job import ClusterJob
from kflow.pipeline.kubeflow.replica import replica_command
from kflow.pipeline.kubeflow.replica_env import ReplicaEnvironmentError, replica_from_environment
from kflow.pipeline.kubeflow.trainjob import render_runtime, render_trainjob
from tests.pipeline.kubeflow.stand_in_trainer import jobset_pods, jobset_spec

ENTRYPOINT = ["python", "-m", "kflow.pipeline.runners.kfp_entrypoint", "--output", "model=/mnt/s/j/outputs/{replica}/m"]


def trainer_node(strategy: str, workers: int, parameter_servers: int = 0, evaluator: bool = False) -> Trainer:
    parameters = {
        "dataset": "mnist",
        "strategy": strategy,
        "workers": workers,
        "parameter_servers": parameter_servers,
        "sidecar_evaluator": evaluator,
    }
    channels = {"examples": Channel("ingest", "examples", Examples), "schema": Channel("ingest", "schema", Schema)}
    return Trainer("train", parameters=parameters, **channels)


def cluster_job(strategy: str, workers: int, parameter_servers: int = 0, evaluator: bool = False) -> ClusterJob:
    node = trainer_node(strategy, workers, parameter_servers, evaluator)
    return ClusterJob(
        name="train-1a2b3c4d",
        namespace="team-a",
        image="registry.example/kflow:1",
        entrypoint=ENTRYPOINT,
        replicas=node.cluster_replicas(),
        framework=node.cluster_framework(),
    )


def pods_of(job: ClusterJob, restart_attempt: int = 0):
    spec = jobset_spec(render_trainjob(job), render_runtime(job))
    return jobset_pods(job.name, job.namespace, spec, restart_attempt)


def container_port(pod) -> int:
    (port,) = pod.spec["containers"][0]["ports"]
    return port["containerPort"]


@pytest.mark.parametrize(
    ("strategy", "workers", "ps", "evaluator", "layout"),
    [
        ("multi_worker_mirrored", 2, 0, False, {"worker": 2}),
        ("parameter_server", 2, 1, False, {"chief": 1, "worker": 2, "ps": 1}),
        ("multi_worker_mirrored", 3, 0, True, {"worker": 3, "evaluator": 1}),
    ],
)
def test_tf_config_from_the_trainjob_variables_is_the_cluster_the_pods_form(
    strategy, workers, ps, evaluator, layout, monkeypatch
):
    import tensorflow as tf

    TFConfigClusterResolver = tf.distribute.cluster_resolver.TFConfigClusterResolver

    pods = pods_of(cluster_job(strategy, workers, ps, evaluator))
    assert {role: sum(p.replicated_job == role for p in pods) for role in layout} == layout
    # What each pod of a role is reachable at: its host name in the JobSet's subdomain, on its container's port.
    ordered = sorted(pods, key=lambda p: p.index)
    members = {
        role: [f"{p.fqdn_short}:{container_port(p)}" for p in ordered if p.replicated_job == role]
        for role in layout
        if role != "evaluator"
    }
    seen = set()
    for pod in pods:
        replica = replica_from_environment(pod.environment())
        config = json.loads(replica.environment["TF_CONFIG"])
        assert config["cluster"] == members  # Every pod sees the same cluster, the evaluator outside it.
        assert config["task"] == {"type": pod.replicated_job, "index": pod.index}
        assert replica.name == f"{pod.replicated_job}-{pod.index}"
        seen.add(replica.name)
        monkeypatch.setenv("TF_CONFIG", replica.environment["TF_CONFIG"])
        resolver = TFConfigClusterResolver()  # What tf.distribute's multi-worker strategies read.
        assert resolver.cluster_spec().as_dict() == members
        assert (resolver.task_type, resolver.task_id) == (pod.replicated_job, pod.index)
    assert len(seen) == len(pods)  # No two pods take the same place.
    # A restart recreates the pods under the same host names: the cluster stays the same.
    again = {p.hostname for p in pods_of(cluster_job(strategy, workers, ps, evaluator), restart_attempt=1)}
    assert again == {p.hostname for p in pods}


@pytest.mark.parametrize("strategy", ["keras_data_parallel", "jax_data_parallel"])
def test_jax_settings_from_the_trainer_v2_jax_policy(strategy, monkeypatch):
    from kflow.components.trainer.strategies.jax_process import JaxProcess

    pods = pods_of(cluster_job(strategy, 3))
    assert [p.replicated_job for p in pods] == ["node"] * 3  # Trainer v2's JAX policy needs the job `node`.
    coordinator = next(p for p in pods if p.index == 0)
    for pod in pods:
        environment = pod.environment()
        assert environment["KERAS_BACKEND"] == "jax"
        replica = replica_from_environment(environment)
        assert replica.environment == {
            "COORDINATOR_ADDRESS": coordinator.fqdn_short,
            "COORDINATOR_PORT": str(container_port(coordinator)),
            "NUM_PROCESSES": "3",
            "PROCESS_ID": str(pod.index),
        }
        for name, value in replica.environment.items():
            monkeypatch.setenv(name, value)
        expected = JaxProcess(count=3, index=pod.index, coordinator=f"{coordinator.fqdn_short}:29500")
        assert JaxProcess.from_environment() == expected
        assert replica.name == f"worker-{pod.index}"


def test_each_replica_writes_to_its_own_folder_and_runs_the_entrypoint():
    pods = pods_of(cluster_job("parameter_server", 2, 1))
    commands = {}
    for pod in pods:
        replica, command = replica_command(pod.environment())
        commands[replica.name] = command
    assert set(commands) == {"chief-0", "worker-0", "worker-1", "ps-0"}
    assert commands["worker-1"] == [*ENTRYPOINT[:-1], "model=/mnt/s/j/outputs/worker-1/m"]


def test_missing_or_wrong_variables_are_one_line_errors():
    with pytest.raises(ReplicaEnvironmentError, match="no cluster variables"):
        replica_from_environment({})
    pod = pods_of(cluster_job("multi_worker_mirrored", 2))[1]
    environment = pod.environment()
    with pytest.raises(ReplicaEnvironmentError, match="missing KFLOW_REPLICAS"):
        replica_from_environment({k: v for k, v in environment.items() if k != "KFLOW_REPLICAS"})
    with pytest.raises(ReplicaEnvironmentError, match="worker 1 is not in KFLOW_REPLICAS"):
        replica_from_environment({**environment, "KFLOW_REPLICAS": '{"worker": 1}'})
    with pytest.raises(ReplicaEnvironmentError, match="KFLOW_ENTRYPOINT"):
        replica_command(environment | {"KFLOW_ENTRYPOINT": ""})
