"""`kflow plan` says what the next `kflow run` does: which components are reused, which run, and why."""

import json
import os
import shutil

import pytest
import yaml

from tests.conftest import REPO

IRIS = REPO / "pipeline" / "configs" / "iris.yaml"


def run(run_kflow, config, root, *settings):
    """`kflow run` (2 epochs, and `settings`); the status of each component in its run.json."""
    overrides = [part for setting in settings for part in ("--set", setting)]
    result = run_kflow("run", config, "--pipeline-root", root, "--set", "trainer.epochs=2", *overrides)
    assert result.returncode in (0, 1), result.stderr[-3000:]  # 1: a 2-epoch model may well not be blessed
    newest = sorted(root.glob("iris/*/run.json"))[-1]
    return {node: entry["status"] for node, entry in json.loads(newest.read_text())["components"].items()}


def plan(run_kflow, config, root, *options):
    result = run_kflow("plan", config, "--pipeline-root", root, "--set", "trainer.epochs=2", "--json", *options)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout)["components"]


@pytest.mark.slow  # ~100 s (three runs); make test runs kflow plan on the docs' configs (tests/docs)
def test_the_plan_is_what_the_next_run_does_after_a_parameter_and_a_data_edit(tmp_path, run_kflow):
    data = tmp_path / "iris.csv"
    shutil.copyfile(REPO / "pipeline" / "configs" / "data" / "iris.csv", data)
    config_data = yaml.safe_load(IRIS.read_text())
    config_data["data"]["source"]["path"] = str(data)
    config = tmp_path / "iris.yaml"
    config.write_text(yaml.safe_dump(config_data))
    root = tmp_path / "runs"

    first = plan(run_kflow, config, root)
    assert {entry["action"] for entry in first.values()} == {"run"} and first["ingest"]["why"] == ["new"]
    run(run_kflow, config, root)

    # A parameter: the data steps are reused, training and what follows run, and the plan says why.
    planned = plan(run_kflow, config, root, "--set", "trainer.batch_size=8")
    assert planned["ingest"]["action"] == "cached" and planned["ingest"]["cached_from"]
    assert planned["train"] == {**planned["train"], "action": "run", "why": ["parameters: batch_size"]}
    # And, when the first run's model was blessed, the evaluation's baseline parameters: that model is now the baseline.
    assert planned["evaluate"]["action"] == "run" and "inputs: model, model_run" in planned["evaluate"]["why"]
    ran = run(run_kflow, config, root, "trainer.batch_size=8")
    assert ran == {node: "cached" if entry["action"] == "cached" else "succeeded" for node, entry in planned.items()}

    # The data, edited in place: everything runs again, the ingest because of that file.
    lines = data.read_text().splitlines()
    lines[1] = "9.9" + lines[1][lines[1].index(",") :]
    data.write_text("\n".join(lines) + "\n")
    planned = plan(run_kflow, config, root, "--set", "trainer.batch_size=8")
    assert planned["ingest"]["action"] == "run" and planned["ingest"]["why"] == ["data: iris.csv"]
    assert all(entry["action"] == "run" for entry in planned.values())
    ran = run(run_kflow, config, root, "trainer.batch_size=8")
    assert set(ran.values()) == {"succeeded"} and set(ran) == set(planned)

    text = run_kflow(
        "plan", config, "--pipeline-root", root, "--set", "trainer.epochs=2", "--set", "trainer.batch_size=8"
    )
    assert text.returncode == 0 and f"0 of {len(planned)} component(s) would run" in text.stdout


def test_a_source_that_is_not_there_is_one_line_naming_the_component(tmp_path, run_kflow):
    empty = tmp_path / "empty"
    empty.mkdir()  # no mnist.npz and no IDX files: what a run's ingest would fail on
    environment = {name: value for name, value in os.environ.items() if name != "KFLOW_DATA_DIR"}
    result = run_kflow("plan", REPO / "pipeline" / "configs" / "mnist.yaml", "--pipeline-root", tmp_path / "runs",
                       "--set", f"data.source.path={empty}", env={**environment, "HOME": str(tmp_path)})  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.startswith(f"kflow: ingest: {empty} holds neither mnist.npz nor the MNIST IDX files")
    assert len(result.stderr.splitlines()) == 1
    assert "Traceback" not in result.stderr


def test_plan_and_diff_name_a_span_input_by_its_ingest(tmp_path, capsys):
    """The union of spans (`ingest`) takes each span at a place, span_0, span_1, …: plan and diff said `inputs: span_0
    (ingest_span_1), span_1 (ingest_span_2)` for one span added, every place it moved. Each span input is named by its
    ingest, as its own plan line is: a span added or gone is its ingest alone, said new or gone (a user trial read a
    window's move as three spans added), a span moved to another place none."""
    from kflow.pipeline.cli.history import diff_runs, format_diff
    from kflow.pipeline.cli.main import main
    from kflow.pipeline.runners.run_record import Run
    from tests.pipeline.app.test_span_pipeline import write

    def plan_and_run(spans, numbers):
        config = write(tmp_path, spans=spans, numbers=numbers)
        assert main(["plan", str(config), "--until", "ingest", "--json"]) == 0
        planned = json.loads(capsys.readouterr().out)["components"]
        assert main(["run", str(config), "--until", "ingest"]) == 0
        capsys.readouterr()
        return planned

    plan_and_run("{last: 1}", (1, 2))  # span 2 alone
    planned = plan_and_run("all", (1, 2))  # span 1 added before it
    assert planned["ingest"]["why"] == ["parameters: spans", "inputs: ingest_span_1 (new)"]
    planned = plan_and_run("{last: 2}", (1, 2, 3))  # span 3 added, span 1 gone
    assert planned["ingest"]["why"] == ["parameters: spans", "inputs: ingest_span_1 (gone), ingest_span_3 (new)"]

    runs = [Run.load(path.parent) for path in sorted((tmp_path / "runs" / "survey").glob("*/run.json"))]
    changed = diff_runs(runs[0], runs[1])["components"]["ingest"]["changed"]
    assert changed == ["parameters: spans", "inputs: ingest_span_1 (new)"]
    line = "  ingest: succeeded → succeeded (parameters: spans; inputs: ingest_span_1 (gone), ingest_span_3 (new))"
    assert line in format_diff(diff_runs(runs[1], runs[2])).splitlines()
