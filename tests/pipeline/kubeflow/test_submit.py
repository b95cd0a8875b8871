"""Submission with `kflow submit` and with the kfp CLI, against a STAND-IN for the KFP API server (not a backend)."""

import subprocess
import sys

import yaml

from kflow.pipeline.cli.main import main
from tests.conftest import REPO
from tests.pipeline.kubeflow.stand_in_api_server import stand_in_kfp_api_server

DEMO = REPO / "pipeline" / "configs" / "demo.yaml"
KFP_CLI = REPO / ".venv" / "bin" / "kfp"


def compiled_demo(tmp_path):
    """The package and what the API server receives: the pipeline spec and, as a second document, the platform
    spec (the shared volume the baseline resolver and the Evaluator mount)."""
    assert main(["compile", str(DEMO), "-o", str(tmp_path / "p.yaml"), "--image", "kflow:0.1.0"]) == 0
    return tmp_path / "p.yaml", sent_spec(tmp_path / "p.yaml")


def sent_spec(package):
    pipeline_spec, platform_spec = yaml.safe_load_all(package.read_text())
    return {"pipeline_spec": pipeline_spec, "platform_spec": platform_spec}


def test_kflow_submit_sends_the_compiled_spec_to_a_new_experiment(tmp_path, capsys):
    _, expected = compiled_demo(tmp_path)
    with stand_in_kfp_api_server() as server:
        code = main(
            [
                "submit",
                str(DEMO),
                "--image",
                "kflow:0.1.0",
                "--endpoint",
                server.endpoint,
                "--experiment",
                "mnist-exp",
                "--run-name",
                "first",
            ]
        )
        (run,) = server.created_runs()
        experiments = list(server.experiments.values())
    assert code == 0
    assert [e["display_name"] for e in experiments] == ["mnist-exp"]
    assert run["display_name"] == "first"
    assert run["experiment_id"] == experiments[0]["experiment_id"]
    assert run["pipeline_spec"] == expected
    assert "submitted run 'first'" in capsys.readouterr().out


def test_kflow_submit_reuses_an_existing_experiment_and_keeps_the_file(tmp_path):
    with stand_in_kfp_api_server() as server:
        for name in ("a", "b"):
            args = [
                "submit",
                str(DEMO),
                "--image",
                "kflow:0.1.0",
                "--endpoint",
                server.endpoint,
                "--experiment",
                "e",
                "--run-name",
                name,
            ]
            assert main([*args, "-o", str(tmp_path / f"{name}.yaml")]) == 0
        runs = server.created_runs()
    assert len(server.experiments) == 1
    assert [run["display_name"] for run in runs] == ["a", "b"]
    assert runs[1]["pipeline_spec"] == sent_spec(tmp_path / "b.yaml")


def test_kflow_submit_to_an_unreachable_endpoint_exits_1(capsys):
    with stand_in_kfp_api_server() as server:
        endpoint = server.endpoint  # The port is free again once the server stopped.
    assert main(["submit", str(DEMO), "--image", "kflow:0.1.0", "--endpoint", endpoint, "--run-name", "r"]) == 1
    err = capsys.readouterr().err
    (line,) = [line for line in err.splitlines() if "submitting" in line]  # no urllib3 line per retry, no repr
    assert line == f"kflow: submitting to {endpoint} failed: no KFP API server answers there ([Errno 111] Connection " \
                   "refused)" and "Retrying" not in err, err  # fmt: skip


def test_kfp_cli_run_submit_sends_the_compiled_spec(tmp_path):
    package, expected = compiled_demo(tmp_path)
    kfp = [str(KFP_CLI)] if KFP_CLI.exists() else [sys.executable, "-m", "kfp.cli.__main__"]
    with stand_in_kfp_api_server() as server:
        result = subprocess.run(
            [*kfp, "--endpoint", server.endpoint, "run", "submit", "-e", "E", "-r", "R", "-f", str(package)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        runs = server.created_runs()
        experiments = list(server.experiments.values())
    assert result.returncode == 0, result.stderr[-3000:]
    assert "deprecated" in result.stderr  # kfp 2.x: `run submit` is an alias of `run create`.
    assert [e["display_name"] for e in experiments] == ["E"]
    (run,) = runs
    assert run["display_name"] == "R"
    assert run["pipeline_spec"] == expected
    assert "R" in result.stdout


def test_submit_passes_a_run_time_parameter_as_a_run_argument_not_a_recompile(tmp_path):
    with stand_in_kfp_api_server() as server:
        code = main(
            [
                *("submit", str(DEMO), "--image", "kflow:0.1.0", "--endpoint", server.endpoint, "--run-name", "r"),
                *("--set", "kubeflow.parameters=[trainer.epochs, trainer.optimizer.learning_rate]"),
                *("--set", "trainer.epochs=5", "--set", "trainer.optimizer.learning_rate=0.01"),
            ]
        )
        assert code == 0
        (run,) = server.created_runs()
    assert run["runtime_config"]["parameters"] == {"trainer_epochs": 5, "trainer_optimizer_learning_rate": 0.01}
    inputs = run["pipeline_spec"]["pipeline_spec"]["root"]["inputDefinitions"]["parameters"]
    assert inputs["trainer_epochs"]["defaultValue"] == 20  # demo.yaml's value: the package was not recompiled
    assert inputs["trainer_optimizer_learning_rate"]["defaultValue"] == 0.002
