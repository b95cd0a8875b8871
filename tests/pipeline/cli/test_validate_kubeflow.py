"""`kflow validate` refuses what `kflow compile` or the cluster would refuse in a config's Kubeflow settings: one line
naming the field, exit 2, before anything is compiled, applied or submitted."""

import pytest
import yaml

from kflow.pipeline.cli.main import main
from tests.conftest import REPO
from tests.pipeline.kubeflow.crd_schema import schema_problems

DEMO = REPO / "pipeline" / "configs" / "demo.yaml"
CLUSTER = ["trainer.strategy=multi_worker_mirrored", "trainer.workers=2", "kubeflow.image=registry.example/kflow:1"]


def sets(*settings: str) -> list[str]:
    return [part for setting in (*CLUSTER, *settings) for part in ("--set", setting)]


@pytest.mark.parametrize(
    "setting, line",
    [
        # The kubelet cannot parse it: every pod would wait in InvalidImageName.
        ("kubeflow.image=Bad Image:tag", 'kubeflow.image: must be an image reference: [registry/]repository'),
        ("kubeflow.image=registry.example/Kflow:1", "kubeflow.image: must be an image reference"),
        # The API server refuses the pod, the claim, the service account and the role binding.
        ("kubeflow.resources.train.node_selector={'gpu pool': l4}", "node_selector: must be a Kubernetes label key"),
        ("kubeflow.resources.train.node_selector={pool: 'gpu pool'}", "pool: must be a Kubernetes label value"),
        ("kubeflow.resources.train.tolerations=[{key: a, operator: Any}]", "0.operator: must be one of Exists, Equal"),
        ("kubeflow.resources.train.tolerations=[{key: gpu, colour: red}]", "tolerations.0.colour: unknown field"),
        ("kubeflow.resources.train.tolerations=[{key: gpu, effect: Never}]", "tolerations.0.effect: must be one of"),
        ("kubeflow.resources.train.gpu_type=gpu", "gpu_type: must be an extended resource name"),
        ("kubeflow.cluster.service_account=Bad_SA", "kubeflow.cluster.service_account: must be a Kubernetes name"),
        ("kubeflow.cluster.launcher_service_account=default_editor", "account: must be a Kubernetes name"),
        ("kubeflow.cluster.shared_volume_claim=Shared", "shared_volume_claim: must be a Kubernetes name"),
        # KFP's compiler refuses a pipeline name past 128 characters (it was a traceback from kfp).
        ("name=" + "p" * 129, "name: must be at most 128 characters (got 129)"),
        # What compile refused and validate let through.
        ("kubeflow.resources.trian={cpu: '1'}", "trian: no component 'trian' in the pipeline; did you mean train?"),
        ("kubeflow.parameters=[trainer.epoch]", "kubeflow.parameters[0]: 'trainer.epoch' sets no component parameter"),
    ],
)  # fmt: skip
def test_validate_and_compile_refuse_what_the_cluster_would_in_one_line_naming_the_field(
    setting, line, tmp_path, capsys
):
    for command in (["validate", str(DEMO)], ["compile", str(DEMO), "-o", str(tmp_path / "p.yaml")]):
        assert main([*command, *sets(setting)]) == 2, command[0]
        err = capsys.readouterr().err
        assert line in err, (command[0], err)
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert not (tmp_path / "p.yaml").exists()


def test_an_image_given_with_the_flag_is_named_as_the_flag(tmp_path, capsys):
    assert main(["compile", str(DEMO), "-o", str(tmp_path / "p.yaml"), "--image", "my registry/kflow"]) == 2
    assert "--image: must be an image reference" in capsys.readouterr().err
    assert main(["manifests", str(DEMO), "-o", str(tmp_path / "k8s"), "--image", "Kflow:1", *sets()]) == 2
    assert "--image: must be an image reference" in capsys.readouterr().err
    assert not (tmp_path / "k8s").exists()


def test_the_docs_kubeflow_section_is_valid_and_renders_objects_the_crds_accept(tmp_path, capsys):
    """docs/kubeflow.md's example settings: image references of every form, a prefixed label, a GPU's toleration."""
    settings = [
        "kubeflow.resources.train={cpu: '4', memory: 8Gi, gpu: 1, gpu_type: amd.com/gpu, "
        "node_selector: {cloud.google.com/gke-accelerator: nvidia-l4, pool: ''}, "
        "tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}, "
        "{key: spot, operator: Equal, value: 'true', effect: NoExecute, tolerationSeconds: 60}]}",
        "kubeflow.cluster={service_account: kflow.training, shared_volume_claim: kflow-shared-2}",
    ]
    assert main(["validate", str(DEMO), *sets(*settings)]) == 0, capsys.readouterr().err
    for image in (
        "REGISTRY/kflow:0.1.0",
        "localhost:5000/team/kflow:v1_gpu",
        "kflow",
        "gcr.io/p/kflow@sha256:" + "a" * 64,
    ):
        folder = tmp_path / image.replace("/", "_").replace(":", "_")
        assert main(["manifests", str(DEMO), "-o", str(folder), "--image", image, *sets(*settings)]) == 0
        runtime = yaml.safe_load((folder / "training-runtimes.yaml").read_text())
        assert schema_problems(runtime) == []
        pod = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
        assert pod["containers"][0]["image"] == image
        assert pod["tolerations"][1] == {
            "key": "spot", "operator": "Equal", "value": "true", "effect": "NoExecute", "tolerationSeconds": 60
        }  # fmt: skip


def test_what_compile_alone_refuses_is_said_by_validate_where_the_config_has_a_kubeflow_section(capsys):
    """A user trial: a credential in the MLflow URI is fine for `kflow run` (redacted in its records) and refused by
    `kflow compile`; validate said nothing. With a `kubeflow` section it says what compile would refuse, and still
    passes."""
    uri = ["--set", "tracking.mlflow.uri=http://kflow:secret@mlflow.example:5000"]
    assert main(["validate", str(DEMO), *sets(), *uri]) == 0
    said = capsys.readouterr().out
    assert "kflow compile would refuse: tracking.mlflow.uri: a credential is not compiled into pipeline.yaml" in said
    assert main(["validate", str(DEMO), *uri]) == 0  # no kubeflow section: a local config, nothing said of compile
    assert "kflow compile" not in capsys.readouterr().out
