import json
import subprocess
import sys
from pathlib import Path

import pytest

from kflow.pipeline.cli.main import main
from kflow.pipeline.dsl.config import load_config
from kflow.pipeline.dsl.dag import Pipeline
from kflow.pipeline.runners.beam_dag_runner import BeamDagRunner
from tests.pipeline.toy.components import Double, Produce

REPO = Path(__file__).resolve().parents[3]
DEMO = REPO / "pipeline" / "configs" / "demo.yaml"


def kflow(*args):
    return subprocess.run(
        [sys.executable, "-m", "kflow.pipeline.cli.main", *map(str, args)], capture_output=True, text=True, cwd=REPO
    )


def test_validate_accepts_the_demo_config():
    result = kflow("validate", DEMO)
    assert result.returncode == 0, result.stderr
    assert "valid" in result.stdout


@pytest.mark.parametrize(
    "override, field",
    [
        ("trainer.epochs=0", "trainer.epochs: must be ≥ 1"),
        ("trainer.epochz=3", "trainer.epochz: unknown field"),
        # Checks made while building the pipeline: the dataset registry, then the split rules of a dataset.
        (
            "data.dataset=cifar",
            "data.dataset: unknown dataset 'cifar' "
            "(registered: mnist, wikitext2, quora, csv, parquet, images, tfrecord, tfds)",
        ),
        ("data.dataset=quora", "data.split.test: quora's source has no labelled test split"),
        ("trainer.strategy=horovod", "trainer.strategy: unknown strategy 'horovod' (registered: default, mirrored"),
        (
            "evaluator.thresholds.acuracy.lower_bound=0.5",
            "evaluator.thresholds.acuracy: no such metric; did you mean accuracy?",
        ),
        (
            "evaluator.slices=[{by: length, boundaries: [3]}]",
            "evaluator.slices[0].by: mnist slices by label, not 'length'",
        ),
        ("trainer.epocs=3", "trainer.epocs: unknown field; did you mean epochs?"),
    ],
)
def test_validate_exits_2_naming_the_field_without_a_traceback(override, field):
    result = kflow("validate", DEMO, "--set", override)
    assert result.returncode == 2
    assert field in result.stderr
    assert "Traceback" not in result.stderr


def test_validate_a_wrong_type_in_a_file(tmp_path):
    config = tmp_path / "bad.yaml"
    config.write_text(DEMO.read_text().replace("batch_size: 32", "batch_size: thirty-two"))
    result = kflow("validate", config)
    assert result.returncode == 2
    assert 'trainer.batch_size: must be an integer (got "thirty-two")' in result.stderr


def test_run_rejects_an_unknown_until_component(tmp_path):
    assert main(["run", str(DEMO), "--pipeline-root", str(tmp_path), "--until", "deploy"]) == 2


def test_show_prints_each_component_with_status_seconds_and_figures(tmp_path, capsys):
    produce = Produce("produce", parameters={"value": 21})
    double = Double("double", numbers=produce.outputs["numbers"])
    result = BeamDagRunner().run(Pipeline("toy", [produce, double]), tmp_path)

    assert main(["show", str(result.run_dir)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"pipeline toy  run {result.run_dir.name}  status succeeded")
    assert lines[2].split()[:2] == ["produce", "succeeded"]
    assert lines[3].split()[:2] == ["double", "succeeded"] and lines[3].endswith("value=42")

    # A pipeline folder shows its newest run.
    assert main(["show", str(tmp_path / "toy")]) == 0
    assert result.run_dir.name in capsys.readouterr().out


def test_show_on_a_folder_without_runs_exits_2(tmp_path):
    assert main(["show", str(tmp_path)]) == 2


def test_run_json_is_valid_json_after_a_run(tmp_path):
    result = BeamDagRunner().run(Pipeline("toy", [Produce("produce")]), tmp_path)
    assert json.loads((result.run_dir / "run.json").read_text())["status"] == "succeeded"


def test_the_gate_reads_every_blessing_of_the_run_whatever_the_node_is_called(tmp_path, capsys):
    from kflow.pipeline.cli.run_outcome import gate as _gate
    from kflow.pipeline.dsl.artifacts import ModelBlessing
    from kflow.pipeline.runners.run_record import Run

    refused, blessed = ModelBlessing(tmp_path / "judge"), ModelBlessing(tmp_path / "second-opinion")
    refused.set_blessed(
        False, [{"metric": "accuracy", "bound": "lower_bound", "threshold": 0.9, "value": 0.5, "passed": False}]
    )
    blessed.set_blessed(True, [])
    record = {
        "run_id": "r1",
        "components": {
            node: {"status": "succeeded", "outputs": {"blessing": {"type": "ModelBlessing", "uri": blessing.uri}}}
            for node, blessing in (("judge", refused), ("second-opinion", blessed))
        },
    }
    run = Run.from_json(record, tmp_path)
    assert _gate(run, "fail") == 1
    assert "judge: the model is NOT BLESSED; failed checks: accuracy 0.5000 >= 0.9 [" in capsys.readouterr().err
    assert _gate(run, "warn") == 0
    del record["components"]["judge"]
    assert _gate(Run.from_json(record, tmp_path), "fail") == 0


def test_validate_lists_every_problem_that_run_would_meet_at_once():
    result = kflow(
        "validate", DEMO, "--set", "data.dataset=quora", "--set", "evaluator.thresholds.acuracy.lower_bound=0.5",
        "--set", "trainer.strategy=parameter_servers",
    )  # fmt: skip
    assert result.returncode == 2
    for problem in (
        "data.split.test: quora's source has no labelled test split",
        "trainer.strategy: unknown strategy 'parameter_servers'; did you mean parameter_server?",
        "evaluator.thresholds.acuracy: no such metric; did you mean accuracy?",
    ):
        assert problem in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("text", ["2e-3", "2E-3", "+2e-03", "2.0e-3"])
def test_learning_rates_written_in_e_notation_are_numbers(text, tmp_path):
    result = kflow("validate", DEMO, "--set", f"trainer.optimizer.learning_rate={text}")
    assert result.returncode == 0, result.stderr
    assert load_config(DEMO, [f"trainer.optimizer.learning_rate={text}"]).trainer.optimizer.learning_rate == 2e-3
    config = tmp_path / "c.yaml"
    config.write_text(DEMO.read_text().replace("learning_rate: 0.002", f"learning_rate: {text}"))
    assert f"learning_rate: {text}" in config.read_text()
    assert load_config(config).trainer.optimizer.learning_rate == 2e-3
