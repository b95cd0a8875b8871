"""`kflow runs` and `kflow diff` on two real runs that differ in one parameter and in their data."""

from __future__ import annotations

import json

import pytest

from tests.conftest import REPO
from tests.reliability.test_data_fingerprints import write_quora_csv

QUORA = REPO / "pipeline" / "configs" / "quora.yaml"


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    from kflow.pipeline.cli.main import main

    root = tmp_path_factory.mktemp("history")
    csv = write_quora_csv(root / "data" / "train.csv", 120)
    common = ["run", str(QUORA), "--pipeline-root", str(root / "runs"), "--set", f"data.source.path={csv}",
              "--set", "evaluator.on_not_blessed=warn", "--set", "trainer.batch_size=32"]  # fmt: skip
    assert main([*common, "--set", "trainer.epochs=1"]) == 0
    csv.write_text(csv.read_text().replace("number 7 about", "number 7 (seven) about"))
    assert main([*common, "--set", "trainer.epochs=2"]) == 0
    return sorted((root / "runs" / "quora").glob("*/run.json"))


@pytest.mark.slow  # the fixture trains Quora twice (~45 s); make test keeps kflow runs/show --json (test_output.py)
def test_runs_lists_both_newest_first(two_runs, run_kflow):
    first, second = (path.parent for path in two_runs)
    listed = run_kflow("runs", first.parent)
    assert listed.returncode == 0
    lines = listed.stdout.splitlines()
    assert lines[0].split()[:4] == ["pipeline", "run", "started", "status"]
    assert [line.split()[1] for line in lines[1:]] == [second.name, first.name]
    assert all(" succeeded " in line and "roc_auc=" in line for line in lines[1:])


@pytest.mark.slow  # shares the fixture above
def test_diff_names_the_parameter_the_data_and_the_metric_changes(two_runs, run_kflow):
    first, second = (path.parent for path in two_runs)
    result = run_kflow("diff", first, second, "--json")
    assert result.returncode == 0, result.stderr
    diff = json.loads(result.stdout)
    assert diff["parameters"] == {"trainer.epochs": {"a": 1, "b": 2}}
    ingest, train = diff["components"]["ingest"], diff["components"]["train"]
    assert (ingest["a"], ingest["b"], ingest["changed"]) == ("succeeded", "succeeded", ["data: train.csv"])
    # The Transform learnt its vocabulary again from the edited question: the Trainer takes its new graph.
    assert train["changed"] == ["parameters: epochs", "inputs: examples, schema, transform_graph"]
    records = [json.loads(path.read_text()) for path in two_runs]
    before, after = (record["components"]["evaluate"]["summary"]["roc_auc"] for record in records)
    assert diff["metrics"]["evaluate.roc_auc"] == {"a": before, "b": after, "change": pytest.approx(after - before)}

    text = run_kflow("diff", first, second).stdout
    assert "trainer.epochs: 1 → 2" in text and "ingest: succeeded → succeeded (data: train.csv)" in text
    assert f"evaluate.roc_auc: {before:.4g} → {after:.4g}" in text


def test_runs_shows_every_verdict_of_a_pipeline_with_several_evaluators(tmp_path):
    """A compare pipeline blesses one model of two: the list says which, not one verdict picked at random."""
    from kflow.pipeline import api
    from kflow.pipeline.cli.history import format_runs, list_runs
    from tests.pipeline.toy.components import Judge, Produce

    produce = Produce("produce", parameters={"value": 3})
    judges = [Judge(f"judge_{n}", numbers=produce.outputs["numbers"], parameters={"at_least": n}) for n in (2, 5)]
    api.run(api.Pipeline("toy", [produce, *judges]), tmp_path)
    (row,) = list_runs(tmp_path / "toy")
    assert [(e["node"], e["blessed"]) for e in row["evaluations"]] == [("judge_2", True), ("judge_5", False)]
    assert row["blessed"] is None
    line = format_runs([row]).splitlines()[1]
    assert "judge_2: yes, judge_5: NO" in line and line.endswith("1 of 2")


@pytest.mark.slow  # two short tabular runs (~25 s)
def test_diff_names_a_column_the_second_runs_data_lacks(tmp_path, run_kflow):
    """A retraining on the table without one column: the test data's difference names it (a user trial: diff said
    'the same spans, rows and statistics'), and the rows' names, new for other rows, are no drift."""
    import pandas as pd

    from kflow.pipeline.cli.main import main

    iris = pd.read_csv(REPO / "pipeline" / "configs" / "data" / "iris.csv")
    iris.to_csv(tmp_path / "all.csv")  # pandas' index: the rows' names
    iris.drop(columns="sepal_width").to_csv(tmp_path / "fewer.csv")
    common = ["run", str(REPO / "pipeline" / "configs" / "table.yaml"), "--pipeline-root", str(tmp_path / "runs"),
              "--set", "trainer.epochs=2", "--set", "evaluator.on_not_blessed=warn"]  # fmt: skip
    for table in ("all.csv", "fewer.csv"):
        assert main([*common, "--set", f"data.source.path={tmp_path / table}", "-q"]) == 0
    first, second = sorted(path.parent for path in (tmp_path / "runs").glob("*/*/run.json"))
    result = run_kflow("diff", first, second, "--json")
    assert result.returncode == 0, result.stderr
    differences = json.loads(result.stdout)["test_data"]["differences"]
    assert "test columns: only in the first run's: sepal_width" in differences, differences
    assert not any("Unnamed" in line or "rownames" in line for line in differences), differences
