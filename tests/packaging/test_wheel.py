"""The built wheel installs kflow under one import name and works without the source tree."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SOURCES = ("pipeline", "components", "schemas", "pyproject.toml", "setup.py", "README.md")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """A wheel built from a copy of the sources (so the build leaves nothing in the work tree)."""
    source = tmp_path_factory.mktemp("source")
    for name in SOURCES:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(REPO / name, source / name)
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(out),
            str(source),
        ],
        check=True,
        capture_output=True,
    )
    (built,) = out.glob("kflow-*.whl")
    return built


def test_only_kflow_at_the_top_of_the_wheel(wheel):
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    top = {name.split("/")[0] for name in names}
    assert top == {"kflow", wheel.name.split("-py3")[0] + ".dist-info"}
    # The declarative files travel with the code.
    assert "kflow/schemas/config.schema.json" in names
    assert "kflow/schemas/mnist/schema.pbtxt" in names
    assert "kflow/pipeline/configs/demo.yaml" in names
    assert "kflow/components/trainer/executor.py" in names


def test_the_wheel_installed_in_a_fresh_venv_validates_a_config(wheel, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(purelib), str(wheel)],
        check=True,
        capture_output=True,
    )
    # The third-party stack comes from this environment's site-packages, read as a plain path entry:
    # its .pth files (among them the editable kflow finder) are not run, so kflow can only come from the wheel.
    (purelib / "stack.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    installed = sorted(p.name for p in purelib.iterdir() if not p.name.endswith((".dist-info", ".pth")))
    assert installed == ["bin", "kflow"]  # bin/: the console script, which pip --target puts beside the packages

    where = subprocess.run(
        [str(python), "-c", "import kflow, kflow.pipeline.cli.main as m; print(m.__file__)"],
        cwd=tmp_path,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    assert Path(where).is_relative_to(purelib)

    config = REPO / "pipeline" / "configs" / "mnist.yaml"
    result = subprocess.run(
        [str(python), "-m", "kflow.pipeline.cli.main", "validate", str(config)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert "valid" in result.stdout
