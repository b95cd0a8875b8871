"""deploy/: the image recipe and the manifests hold what the compiled pipeline relies on."""

import re

import yaml

from kflow.pipeline.kubeflow.tfjob import DEFAULT_TEMPLATE
from tests.conftest import REPO

DEPLOY = REPO / "deploy"


def test_the_dockerfile_pins_its_base_runs_as_non_root_and_uses_the_lock_file():
    text = (DEPLOY / "Dockerfile").read_text()
    (base,) = re.findall(r"^FROM (\S+)", text, flags=re.MULTILINE)
    assert re.fullmatch(r"python:3\.11\.\d+-slim(-\w+)?(@sha256:[0-9a-f]{64})?", base), base
    assert re.search(r"^USER 10001", text, flags=re.MULTILINE)
    assert "-c requirements.lock" in text
    assert "COPY deploy" in text  # The TFJob launcher reads the template from the image.


def test_the_manifests_are_kubernetes_objects_wired_to_each_other():
    kinds = {path.name: [doc["kind"] for doc in yaml.safe_load_all(path.read_text())] for path in DEPLOY.glob("*.yaml")}
    assert kinds["tfjob.template.yaml"] == ["TFJob"]
    assert kinds["rbac.yaml"] == ["Role", "RoleBinding"]
    assert kinds["shared-volume.yaml"] == ["PersistentVolumeClaim"]
    assert kinds["training-job.yaml"] == ["TFJob"]
    assert DEFAULT_TEMPLATE == DEPLOY / "tfjob.template.yaml"
    (role, _) = yaml.safe_load_all((DEPLOY / "rbac.yaml").read_text())
    assert {"create", "get"} <= set(role["rules"][0]["verbs"])
    assert role["rules"][0]["resources"] == ["tfjobs", "jaxjobs"]
    pvc = yaml.safe_load((DEPLOY / "shared-volume.yaml").read_text())
    assert pvc["metadata"]["name"] == "kflow-shared" and pvc["spec"]["accessModes"] == ["ReadWriteMany"]
    assert (DEPLOY / "README.md").read_text().count("kfp --endpoint") >= 1
