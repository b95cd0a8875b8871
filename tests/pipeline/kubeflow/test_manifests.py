"""`kflow manifests`: what a Trainer v2 cluster needs for a config; it passes the CRDs, API models, Pod Security."""

from pathlib import Path

import pytest
import yaml

from kflow.pipeline.cli.main import main
from kflow.pipeline.kubeflow.job_launcher import launcher_rules
from tests.conftest import REPO
from tests.pipeline.kubeflow.api_models import model_differences
from tests.pipeline.kubeflow.crd_schema import FILES, schema_problems
from tests.pipeline.kubeflow.pod_security import restricted_violations

MNIST = REPO / "pipeline" / "configs" / "mnist.yaml"
LAYOUTS = {
    "multi_worker_mirrored": ["trainer.strategy=multi_worker_mirrored", "trainer.workers=2"],
    "parameter_server": ["trainer.strategy=parameter_server", "trainer.workers=2", "trainer.parameter_servers=1"],
    "sidecar_evaluator": [
        "trainer.strategy=multi_worker_mirrored",
        "trainer.workers=2",
        "trainer.sidecar_evaluator=true",
    ],
    "keras_data_parallel": ["trainer.strategy=keras_data_parallel", "trainer.workers=2"],
}


def manifests(tmp_path: Path, *settings: str, config: Path = MNIST) -> dict[str, list[dict]]:
    folder = tmp_path / "manifests"
    overrides = [part for setting in settings for part in ("--set", setting)]
    assert main(["manifests", str(config), "-o", str(folder), "--image", "registry.example/kflow:1", *overrides]) == 0
    return {
        str(path.relative_to(folder)): list(yaml.safe_load_all(path.read_text()))
        for path in sorted(folder.rglob("*.yaml"))
    }


def pod_specs(manifest: dict) -> list[dict]:
    if manifest["kind"] == "TrainingRuntime":
        jobs = manifest["spec"]["template"]["spec"]["replicatedJobs"]
        return [job["template"]["spec"]["template"]["spec"] for job in jobs]
    if manifest["kind"] in ("TFJob", "JAXJob"):
        specs = manifest["spec"]["tfReplicaSpecs" if manifest["kind"] == "TFJob" else "jaxReplicaSpecs"]
        return [spec["template"]["spec"] for spec in specs.values()]
    return []


@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_manifests_pass_the_crd_schemas_the_api_models_and_pod_security(layout, tmp_path, capsys):
    files = manifests(tmp_path, *LAYOUTS[layout])
    assert set(files) == {
        "launcher-rbac.yaml",
        "per-run/train-trainjob.yaml",  # what the launcher creates each run: `kubectl apply -f DIR` leaves it out
        "service-account.yaml",
        "shared-volume.yaml",
        "training-runtimes.yaml",
    }
    objects = [manifest for found in files.values() for manifest in found]
    assert sorted(m["kind"] for m in objects) == sorted(
        [
            "Role",
            "RoleBinding",
            "TrainJob",
            "NetworkPolicy",
            "ServiceAccount",
            "PersistentVolumeClaim",
            "TrainingRuntime",
        ]
    )
    pods = 0
    for manifest in objects:
        if manifest["kind"] in FILES:
            assert schema_problems(manifest) == [], manifest["kind"]
        assert model_differences(manifest) == [], manifest["kind"]
        for pod in pod_specs(manifest):
            assert restricted_violations(pod) == []
            pods += 1
    expected_roles = {
        "multi_worker_mirrored": 1,
        "parameter_server": 3,
        "sidecar_evaluator": 2,
        "keras_data_parallel": 1,
    }
    assert pods == expected_roles[layout]
    assert "kubectl apply -f" in capsys.readouterr().out


def test_the_runtime_is_the_one_the_launcher_renders_and_the_accounts_are_least_privilege(tmp_path):
    files = manifests(tmp_path, *LAYOUTS["parameter_server"])
    (runtime,) = files["training-runtimes.yaml"]
    trainjob, policy = files["per-run/train-trainjob.yaml"]
    assert trainjob["spec"]["runtimeRef"]["name"] == runtime["metadata"]["name"]
    assert policy["spec"]["podSelector"]["matchLabels"] == {"jobset.sigs.k8s.io/jobset-name": "train-example"}
    (account,) = files["service-account.yaml"]
    assert account["metadata"]["name"] == "kflow-training" and account["automountServiceAccountToken"] is False
    role, binding = files["launcher-rbac.yaml"]
    assert role["rules"] == launcher_rules("trainjob")
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "pipeline-runner", "namespace": "kubeflow"}]
    (claim,) = files["shared-volume.yaml"]
    assert claim["metadata"]["name"] == "kflow-shared" and claim["spec"]["accessModes"] == ["ReadWriteMany"]


def test_with_kubeflow_training_tfjob_the_manifests_hold_a_tfjob_and_its_rbac(tmp_path):
    files = manifests(tmp_path, *LAYOUTS["parameter_server"], "kubeflow.training=tfjob")
    assert "training-runtimes.yaml" not in files
    tfjob, _ = files["per-run/train-tfjob.yaml"]
    assert tfjob["kind"] == "TFJob" and model_differences(tfjob) == []
    assert files["launcher-rbac.yaml"][0]["rules"] == launcher_rules("tfjob")


def test_a_single_process_config_needs_the_volume_and_the_accounts_only(tmp_path, capsys):
    files = manifests(tmp_path)
    assert "training-runtimes.yaml" not in files and not any(name.startswith("per-run") for name in files)
    assert "no node runs as a cluster" in capsys.readouterr().out


def test_a_bad_setting_exits_2_naming_it(tmp_path, capsys):
    folder = tmp_path / "m"
    code = main(["manifests", str(MNIST), "-o", str(folder), "--image", "x:1", "--set", "kubeflow.training=mpijob"])
    assert code == 2 and "kubeflow.training:" in capsys.readouterr().err
    assert not folder.exists()


def test_a_folder_written_before_keeps_none_of_its_earlier_files(tmp_path, capsys):
    """`kubectl apply -f DIR` applies every YAML file there: writing again removes what kflow wrote before (an old
    runtime, per-run/), and only that; a non-empty folder kflow did not write is refused, untouched."""
    folder = tmp_path / "manifests"
    first = manifests(tmp_path, *LAYOUTS["parameter_server"])
    assert "training-runtimes.yaml" in first and any(name.startswith("per-run/") for name in first)
    (folder / "mine.yaml").write_text("kind: ConfigMap\n")  # the user's own file, added since
    second = manifests(tmp_path)  # single process: no runtime, no per-run/
    assert "training-runtimes.yaml" not in second and not (folder / "per-run").exists()
    assert set(second) == {"mine.yaml", "launcher-rbac.yaml", "service-account.yaml", "shared-volume.yaml"}

    other = tmp_path / "someone-elses"
    other.mkdir()
    (other / "deployment.yaml").write_text("kind: Deployment\n")
    capsys.readouterr()
    assert main(["manifests", str(MNIST), "-o", str(other), "--image", "registry.example/kflow:1"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert f"-o {other}: the folder is not empty and was not written by kflow manifests" in line
    assert [path.name for path in other.iterdir()] == ["deployment.yaml"]
