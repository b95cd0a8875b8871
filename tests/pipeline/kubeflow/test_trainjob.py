"""Trainer v2 objects as kflow renders them pass the v2.3.0 CRDs, the kubeflow-trainer-api models and Pod Security."""

import copy

import pytest

from kflow.pipeline.kubeflow.cluster_job import ClusterJob, job_name, owner_reference
from kflow.pipeline.kubeflow.trainjob import (
    render_network_policy,
    render_runtime,
    render_trainjob,
    runtime_name,
    trainjob_state,
)
from tests.pipeline.kubeflow.api_models import model_differences
from tests.pipeline.kubeflow.crd_schema import expression_rules, schema_problems
from tests.pipeline.kubeflow.pod_security import restricted_violations
from tests.pipeline.kubeflow.test_trainjob_env import cluster_job

LAYOUTS = [
    ("multi_worker_mirrored", 2, 0, False),
    ("parameter_server", 2, 1, False),
    ("parameter_server", 3, 2, True),
    ("multi_worker_mirrored", 2, 0, True),
    ("keras_data_parallel", 2, 0, False),
]
OWNER = owner_reference("v1", "Pod", "train-launcher-x7", "3f1c0e0a-8e8b-4a8e-9a3e-1f2d3c4b5a69")


def pod_specs(runtime):
    return [
        rjob["template"]["spec"]["template"]["spec"] for rjob in runtime["spec"]["template"]["spec"]["replicatedJobs"]
    ]


@pytest.mark.parametrize(("strategy", "workers", "ps", "evaluator"), LAYOUTS)
def test_rendered_objects_pass_the_crd_schemas_the_api_models_and_pod_security(strategy, workers, ps, evaluator):
    job = cluster_job(strategy, workers, ps, evaluator)
    runtime, trainjob = render_runtime(job), render_trainjob(job, OWNER)
    for manifest in (runtime, trainjob):
        assert schema_problems(manifest) == []
        assert model_differences(manifest) == []
    assert model_differences(render_network_policy(job, OWNER)) == []
    for pod in pod_specs(runtime):
        assert restricted_violations(pod) == []
        assert pod["automountServiceAccountToken"] is False and pod["serviceAccountName"] == "kflow-training"


def test_the_checks_catch_what_the_api_server_would_refuse():
    job = cluster_job("parameter_server", 2, 1)
    runtime = render_runtime(job)
    broken = copy.deepcopy(runtime)
    jobset = broken["spec"]["template"]["spec"]
    jobset["failurePolicy"]["restartStrategy"] = "Restart"  # not an enum value
    jobset["replicatedJobs"][0]["templte"] = {}  # misspelled
    del jobset["replicatedJobs"][1]["name"]  # required
    assert schema_problems(broken) == [
        "/spec/template/spec/failurePolicy/restartStrategy: 'Restart' is not one of "
        "['Recreate', 'BlockingRecreate', 'InPlaceRestart']",
        "/spec/template/spec/replicatedJobs[0]/templte: unknown field",
        "/spec/template/spec/replicatedJobs[1]/name: required",
    ]
    trainjob = render_trainjob(job)
    trainjob["spec"]["trainer"]["numNodes"] = "2"
    trainjob["metadata"]["name"] = "Train_1"
    assert schema_problems(trainjob) == [
        "/spec/trainer/numNodes: '2' is not an integer",
        "/metadata/name: metadata.name must match RFC 1035 DNS label format",
    ]
    misspelt = render_trainjob(job)
    misspelt["spec"]["trainer"]["nodes"] = 2
    assert model_differences(misspelt) == ["/spec/trainer/nodes: not a field of the API"]
    pod = pod_specs(runtime)[0]
    pod["containers"][0]["securityContext"]["allowPrivilegeEscalation"] = True
    pod["volumes"].append({"name": "host", "hostPath": {"path": "/"}})
    assert restricted_violations(pod) == [
        "volume host: type ['hostPath'] not allowed",
        "container chief: allowPrivilegeEscalation must be false",
    ]
    assert expression_rules("TrainJob") > 10  # The CEL rules the structural check leaves to the API server.


def test_roles_become_replicated_jobs_and_the_workers_are_the_trainer_step():
    job = cluster_job("parameter_server", 3, 2, evaluator=True)
    jobset = render_runtime(job)["spec"]["template"]["spec"]
    rjobs = {rjob["name"]: rjob for rjob in jobset["replicatedJobs"]}
    assert list(rjobs) == ["chief", "worker", "ps", "evaluator"]
    assert {name: rjob["template"]["spec"]["parallelism"] for name, rjob in rjobs.items()} == {
        "chief": 1,
        "worker": 3,
        "ps": 2,
        "evaluator": 1,
    }
    trainer = [
        name
        for name, rjob in rjobs.items()
        if rjob["template"]["metadata"]["labels"].get("trainer.kubeflow.org/trainjob-ancestor-step") == "trainer"
    ]
    assert trainer == ["worker"]
    assert rjobs["worker"]["template"]["spec"]["template"]["spec"]["containers"][0]["name"] == "node"
    # The chief (and the sidecar evaluator) decide success; the serving roles are stopped then.
    assert jobset["successPolicy"] == {"operator": "All", "targetReplicatedJobs": ["chief", "evaluator"]}
    mirrored = render_runtime(cluster_job("multi_worker_mirrored", 2))["spec"]["template"]["spec"]
    assert "successPolicy" not in mirrored  # every worker must finish
    trainjob = render_trainjob(job)
    assert trainjob["spec"]["trainer"]["numNodes"] == 3
    patched = trainjob["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
    assert [patch["name"] for patch in patched] == ["chief", "ps", "evaluator"]


def test_restarts_deadline_and_owner():
    job = ClusterJob(**{**cluster_job("multi_worker_mirrored", 2).__dict__, "max_restarts": 3, "deadline_seconds": 600})
    assert render_runtime(job)["spec"]["template"]["spec"]["failurePolicy"] == {
        "maxRestarts": 3,
        "restartStrategy": "Recreate",
    }
    trainjob = render_trainjob(job, OWNER)
    assert trainjob["spec"]["activeDeadlineSeconds"] == 600
    assert trainjob["metadata"]["ownerReferences"] == [OWNER]
    assert trainjob["spec"]["runtimeRef"] == {
        "apiGroup": "trainer.kubeflow.org",
        "kind": "TrainingRuntime",
        "name": runtime_name(job),
    }


def test_the_runtime_is_named_after_its_content():
    job = cluster_job("parameter_server", 2, 1)
    same = ClusterJob(**{**job.__dict__, "name": "train-99999999"})  # another run of the same config
    assert runtime_name(job) == runtime_name(same) and runtime_name(job).startswith("kflow-train-")
    for change in ({"image": "registry.example/kflow:2"}, {"replicas": {"chief": 1, "worker": 2, "ps": 2}}):
        assert runtime_name(ClusterJob(**{**job.__dict__, **change})) != runtime_name(job)
    assert render_runtime(job)["metadata"]["name"] == runtime_name(job)


def test_only_the_jobs_own_pods_reach_the_training_port_or_a_jax_jobs_gloo_ports():
    job = cluster_job("multi_worker_mirrored", 2)
    policy = render_network_policy(job)["spec"]
    mine = {"jobset.sigs.k8s.io/jobset-name": job.name}
    assert policy["podSelector"] == {"matchLabels": mine} and policy["policyTypes"] == ["Ingress"]
    assert policy["ingress"] == [
        {"from": [{"podSelector": {"matchLabels": mine}}], "ports": [{"protocol": "TCP", "port": 2222}]}
    ]
    jax = render_network_policy(cluster_job("jax_data_parallel", 2))["spec"]
    # gloo listens on ephemeral ports besides the coordinator's 29500 (measured: test_collective_ports.py).
    assert jax["ingress"] == [{"from": [{"podSelector": {"matchLabels": jax["podSelector"]["matchLabels"]}}],
                               "ports": [{"protocol": "TCP"}]}]  # fmt: skip


def test_job_names_are_dns_labels_short_enough_for_their_pods():
    assert job_name("train", "1a2b3c4d") == "train-1a2b3c4d"
    assert job_name("train_big", "1a2b3c4d") == "train-big-1a2b3c4d"
    long = job_name("t" * 80, "1a2b3c4d")
    assert len(f"{long}-evaluator-0-999") <= 63
    assert job_name("9lives", "00") == "j-9lives-00"


def test_the_state_of_a_trainjob_from_its_conditions():
    assert trainjob_state({}) == (None, "")
    suspended = {"status": {"conditions": [{"type": "Suspended", "status": "True", "reason": "Suspended"}]}}
    assert trainjob_state(suspended) == (None, "")
    failed = {
        "status": {
            "conditions": [
                {
                    "type": "Failed",
                    "status": "True",
                    "reason": "ReachedMaxRestarts",
                    "message": "jobset failed due to reaching max number of restarts",
                }
            ]
        }
    }
    assert trainjob_state(failed) == (
        "Failed",
        "ReachedMaxRestarts: jobset failed due to reaching max number of restarts",
    )
    done = {"status": {"conditions": [{"type": "Complete", "status": "True", "reason": "AllJobsCompleted"}]}}
    assert trainjob_state(done)[0] == "Succeeded"
