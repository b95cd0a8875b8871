"""Paths in a config file are relative to its folder (what a run reads); `--set` values to the current
directory; `kflow compile` names every input path the pods will not see."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

from kflow.pipeline.app.commands import local_path_warnings
from kflow.pipeline.dsl.config import load_config
from tests.conftest import REPO


def kflow(*args, cwd):
    command = [sys.executable, "-m", "kflow.pipeline.cli.main", *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, cwd=cwd, timeout=300)


def a_project(tmp_path):
    project = tmp_path / "project"
    (project / "data").mkdir(parents=True)
    (project / "data" / "iris.csv").write_text((REPO / "pipeline" / "configs" / "data" / "iris.csv").read_text())
    (project / "my_model.py").write_text((REPO / "tests" / "pipeline" / "user" / "iris_model.py").read_text())
    config = {
        "name": "iris",
        "data": {"dataset": "csv", "source": {"path": "data/iris.csv"}, "label": "species"},
        "trainer": {"module": "my_model.py"},
        "evaluator": {"baseline": "none"},
    }
    (project / "iris.yaml").write_text(yaml.safe_dump(config))
    return project


def test_a_config_reads_its_inputs_beside_it_from_any_directory(tmp_path):
    project = a_project(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = kflow("validate", project / "iris.yaml", cwd=elsewhere)
    assert done.returncode == 0, done.stderr
    config = load_config(project / "iris.yaml")
    assert config.data.source.path == str(project / "data" / "iris.csv")
    assert config.trainer.module == str(project / "my_model.py")
    assert config.evaluator.baseline == "none" and config.pipeline_root == "runs"  # Outputs: where you work.
    # A --set value is typed on a command line: relative to the current directory.
    (elsewhere / "copy.csv").write_text((project / "data" / "iris.csv").read_text())
    done = kflow("validate", project / "iris.yaml", "--set", "data.source.path=copy.csv", cwd=elsewhere)
    assert done.returncode == 0, done.stderr
    done = kflow("validate", project / "iris.yaml", "--set", "data.source.path=copy.csv", cwd=project)
    assert done.returncode == 2 and f"data.source.path: {project / 'copy.csv'} does not exist" in done.stderr
    # Recorded absolute, as a config file's relative paths are (diff compared '/…/iris.csv' with 'copy.csv').
    assert load_config(project / "iris.yaml", ["data.source.path=copy.csv"]).data.source.path == str(
        Path.cwd() / "copy.csv"
    )
    assert load_config(project / "iris.yaml", ["data.source={path: copy.csv}"]).data.source.path == str(
        Path.cwd() / "copy.csv"
    )
    # An importable module name is not a path.
    assert load_config(project / "iris.yaml", ["trainer.module=tests.pipeline.user.iris_model"]).trainer.module == (
        "tests.pipeline.user.iris_model"
    )


def test_compile_names_every_input_path_the_pods_will_not_see(tmp_path):
    project = a_project(tmp_path)
    done = kflow(
        "compile", project / "iris.yaml", "-o", tmp_path / "p.yaml", "--image", "r.example/kflow:1", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if line.startswith("kflow: warning:")]
    assert warnings == [
        f"kflow: warning: data.source.path: {project / 'data' / 'iris.csv'} is a path on this machine: the pods "
        "will not see it unless it is on the shared volume (mounted at /mnt/kflow-shared) or in an object store "
        "(gs://, s3://, minio://)"
    ]
    # A source only the pods see compiles (validate and run, which read it here, would refuse it).
    done = kflow(
        "compile", project / "iris.yaml", "-o", tmp_path / "q.yaml", "--image", "r.example/kflow:1",
        "--set", "data.source.path=/mnt/kflow-shared/iris.csv", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    on_volume = load_config(project / "iris.yaml", ["data.source.path=/mnt/kflow-shared/iris.csv"])
    assert local_path_warnings(on_volume, "/mnt/kflow-shared") == []
    in_a_bucket = load_config(project / "iris.yaml", ["data.source.path=gs://bucket/iris.csv"])
    assert local_path_warnings(in_a_bucket, "/mnt/kflow-shared") == []
