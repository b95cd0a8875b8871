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


def scripted(*, numbers, module, module_source):
    """A toy executor of a component that reads a user's module (its path and, for the cache key, its source)."""
    (numbers.path / "value.txt").write_text(str(len(module_source)))
    return {"value": len(module_source)}


def test_diff_and_plan_say_a_module_changed_under_the_same_path(tmp_path):
    """A retraining after an edit of the transform.module file: the config holds the same path, and diff said
    `config: same` (a user trial); it names the field whose file changed. Why the node re-ran, in diff and plan, is
    its code (the file's name), not `parameters: module_source` (another user trial)."""
    from kflow.pipeline import api
    from kflow.pipeline.cli.history import diff_runs, format_diff
    from kflow.pipeline.dsl.artifacts import Examples
    from kflow.pipeline.dsl.component import Component, ComponentSpec, Parameter
    from kflow.pipeline.runners.plan import plan_pipeline
    from kflow.pipeline.runners.run_record import Run

    class Scripted(Component):
        spec = ComponentSpec(
            outputs={"numbers": Examples},
            parameters={"module": Parameter(str, affects_output=False), "module_source": Parameter(str)},
            executor=f"{__name__}:scripted",
        )

    module = tmp_path / "prep.py"
    for source in ("x = 1\n", "x = 2\n"):
        module.write_text(source)
        node = Scripted("transform", parameters={"module": str(module), "module_source": source})
        config = {"transform": {"module": str(module)}, "trainer": {"epochs": 1}}
        api.run(api.Pipeline("toy", [node], metadata={"config": config}), tmp_path / "runs")
    first, second = (Run.load(path.parent) for path in sorted((tmp_path / "runs").glob("toy/*/run.json")))
    diff = diff_runs(first, second)
    assert diff["parameters"] == {"transform.module": {"a": str(module), "b": str(module), "content_changed": True}}
    assert f"transform.module: '{module}', the same path; its content changed" in format_diff(diff)
    assert diff["components"]["transform"]["changed"] == ["code: prep.py"]
    module.write_text("x = 3\n")
    edited = Scripted("transform", parameters={"module": str(module), "module_source": module.read_text()})
    (planned,) = plan_pipeline(api.Pipeline("toy", [edited]), tmp_path / "runs")
    assert (planned.action, planned.why) == ("run", ["code: prep.py"])


def evaluated(*, numbers, label, headline, loss):
    """A toy executor standing for an ingest and an Evaluator at once: the label read, the task's headline metric."""
    (numbers.path / "value.txt").write_text(label)
    return {"blessed": True, "headline": headline, "loss": loss}


@pytest.mark.parametrize(
    ("second", "reason"),
    [
        (("species", "accuracy", 0.3), None),
        (("sex", "accuracy", 0.3), "label species → sex"),
        (("petal_width", "rmse", 0.1), "label species → petal_width; headline metric accuracy → rmse"),
    ],
)
def test_diff_compares_metrics_only_of_models_predicting_the_same_thing(tmp_path, second, reason):
    """Another label, or a regression against a classification: a `loss` of each is no change of the model's (a user
    trial read `loss: 0.52 → 0.08 (-0.44)` across tasks); diff says why it does not compare them."""
    from kflow.pipeline import api
    from kflow.pipeline.cli.history import diff_runs, format_diff
    from kflow.pipeline.dsl.artifacts import Examples
    from kflow.pipeline.dsl.component import Component, ComponentSpec, Parameter
    from kflow.pipeline.runners.run_record import Run

    class Evaluated(Component):
        spec = ComponentSpec(
            outputs={"numbers": Examples},
            parameters={"label": Parameter(str), "headline": Parameter(str), "loss": Parameter(float)},
            executor=f"{__name__}:evaluated",
        )

    for label, headline, loss in (("species", "accuracy", 0.5), second):
        node = Evaluated("evaluate", parameters={"label": label, "headline": headline, "loss": loss})
        api.run(api.Pipeline("toy", [node]), tmp_path / "runs")
    first, later = (Run.load(path.parent) for path in sorted((tmp_path / "runs").glob("toy/*/run.json")))
    diff = diff_runs(first, later)
    if reason is None:
        assert diff["metrics"]["evaluate.loss"]["change"] == pytest.approx(-0.2)
    else:
        assert (
            diff["metrics"] == {} and diff["metrics_not_compared"] == f"the models predict different things ({reason})"
        )
        assert f"  not compared: the models predict different things ({reason})" in format_diff(diff)


def read(*, numbers, source_path, label):
    """A toy executor standing for an ingest: the data read and its label."""
    (numbers.path / "value.txt").write_text(f"{source_path} {label}")
    return {"read": 1}


def test_runs_names_the_data_where_the_runs_of_a_pipeline_read_different_tables(tmp_path):
    """table.yaml's one pipeline trains any table: `kflow runs` tells its runs apart by data and label (a user trial
    could not), and shows no such column where every run read the same."""
    from kflow.pipeline import api
    from kflow.pipeline.cli.history import format_runs, list_runs
    from kflow.pipeline.dsl.artifacts import Examples
    from kflow.pipeline.dsl.component import Component, ComponentSpec, Parameter

    class Read(Component):
        spec = ComponentSpec(
            outputs={"numbers": Examples},
            parameters={"source_path": Parameter(str), "label": Parameter(str)},
            executor=f"{__name__}:read",
        )

    def listed():
        return format_runs(list_runs(tmp_path / "runs")).splitlines()

    for path, label in (("/data/iris.csv", "species"), ("/data/iris.csv", "species"), ("/data/penguins/", "sex")):
        node = Read("ingest", parameters={"source_path": path, "label": label})
        api.run(api.Pipeline("table", [node]), tmp_path / "runs", enable_cache=False)
        if label == "species":
            assert "data (label)" not in listed()[0]
    header, *lines = listed()
    assert "data (label)" in header
    assert [line.split()[6:8] for line in lines] == [
        ["penguins", "(sex)"],
        ["iris.csv", "(species)"],
        ["iris.csv", "(species)"],
    ]


def fitted(*, examples, model):
    """A toy executor standing for a Trainer."""
    (model.path / "weights.txt").write_text((examples.path / "value.txt").read_text())
    return {}


def scored(*, model, examples, predictions):
    """A toy executor standing for the Predictor."""
    (predictions.path / "predictions.txt").write_text((examples.path / "value.txt").read_text())
    return {}


def test_runs_names_the_data_the_model_learnt_from_not_the_rows_a_declared_pipeline_scored(tmp_path):
    """A declared pipeline trains on one ingest and scores another (label: null, feeding a predict node): `kflow runs`
    named the scoring file, the first ingest to run (a user trial: dia_new.csv for diamonds.csv (price)); it names
    the ingest upstream of the trainer, and tells runs apart by their training data though they scored one file."""
    from kflow.pipeline import api
    from kflow.pipeline.cli.history import format_runs, list_runs
    from kflow.pipeline.dsl.artifacts import Examples, InferenceResult, Model
    from kflow.pipeline.dsl.component import Component, ComponentSpec, Parameter

    class Ingest(Component):
        spec = ComponentSpec(
            outputs={"numbers": Examples},
            parameters={"source_path": Parameter(str), "label": Parameter(str, optional=True)},
            executor=f"{__name__}:read",
        )

    class Train(Component):
        spec = ComponentSpec(inputs={"examples": Examples}, outputs={"model": Model}, executor=f"{__name__}:fitted")

    class Predict(Component):
        spec = ComponentSpec(
            inputs={"model": Model, "examples": Examples},
            outputs={"predictions": InferenceResult},
            executor=f"{__name__}:scored",
        )

    for table in ("diamonds.csv", "diamonds-2025.csv"):
        new_rows = Ingest("new_rows", parameters={"source_path": "/data/dia_new.csv", "label": None})
        ingest = Ingest("ingest", parameters={"source_path": f"/data/{table}", "label": "price"})
        train = Train("train", examples=ingest.outputs["numbers"])
        predict = Predict("predict", model=train.outputs["model"], examples=new_rows.outputs["numbers"])
        api.run(api.Pipeline("diamonds", [new_rows, ingest, train, predict]), tmp_path / "runs")
    rows = list_runs(tmp_path / "runs")
    assert [row["data"] for row in rows] == ["diamonds-2025.csv (price)", "diamonds.csv (price)"]
    header, *lines = format_runs(rows).splitlines()
    assert "data (label)" in header
    assert [line.split()[6:8] for line in lines] == [["diamonds-2025.csv", "(price)"], ["diamonds.csv", "(price)"]]


def test_diff_says_an_option_set_where_there_were_none_by_its_own_field(tmp_path):
    """model_options {} → {dropout: 0.2} is one change, `trainer.model_options.dropout: None → 0.2`; diff also said
    `trainer.model_options: {} → None` (a user trial)."""
    from kflow.pipeline import api
    from kflow.pipeline.cli.history import diff_runs
    from kflow.pipeline.runners.run_record import Run
    from tests.pipeline.toy.components import Produce

    for options in ({}, {"dropout": 0.2}):
        config = {"trainer": {"epochs": 1, "model_options": options}}
        api.run(api.Pipeline("toy", [Produce("produce")], metadata={"config": config}), tmp_path / "runs")
    first, second = (Run.load(path.parent) for path in sorted((tmp_path / "runs").glob("toy/*/run.json")))
    assert diff_runs(first, second)["parameters"] == {"trainer.model_options.dropout": {"a": None, "b": 0.2}}
    assert diff_runs(second, first)["parameters"] == {"trainer.model_options.dropout": {"a": 0.2, "b": None}}


def test_diff_says_a_field_that_was_a_mapping_and_is_a_value_once(tmp_path):
    """data.spans {last: 1} → all said `data.spans: None → 'all'` and `data.spans.last: 1 → None`: two lines, the
    first false. Now one: the two wholes."""
    from kflow.pipeline import api
    from kflow.pipeline.cli.history import diff_runs, format_diff
    from kflow.pipeline.runners.run_record import Run
    from tests.pipeline.toy.components import Produce

    for spans in ({"last": 1, "skip": 0}, "all"):
        config = {"data": {"label": "y", "spans": spans}}
        api.run(api.Pipeline("toy", [Produce("produce")], metadata={"config": config}), tmp_path / "runs")
    first, second = (Run.load(path.parent) for path in sorted((tmp_path / "runs").glob("toy/*/run.json")))
    assert diff_runs(first, second)["parameters"] == {"data.spans": {"a": {"last": 1, "skip": 0}, "b": "all"}}
    assert diff_runs(second, first)["parameters"] == {"data.spans": {"a": "all", "b": {"last": 1, "skip": 0}}}
    assert "  data.spans: {'last': 1, 'skip': 0} → 'all'" in format_diff(diff_runs(first, second)).splitlines()


def test_a_span_pipelines_data_is_its_pattern_not_one_spans_file(tmp_path):
    """A user trial: `kflow runs` named each run of credit-{SPAN}.csv by one span's file (credit-02.csv, credit-03.csv)
    though every run read the same pattern, several spans each."""
    import json

    from kflow.pipeline.cli.history import _data_read
    from kflow.pipeline.runners.run_record import Run

    run_dir = tmp_path / "20261202-000000-000000-aaaa"
    run_dir.mkdir()
    ingest = {"status": "succeeded", "parameters": {"source_path": "/data/credit-03.csv", "label": "Status"}}
    config = {"data": {"source": {"path": "/data/credit-{SPAN}.csv"}, "label": "Status"}}
    record = {"run_id": run_dir.name, "pipeline": "credit", "metadata": {"config": config},
              "components": {"ingest_span_3": ingest}}  # fmt: skip
    (run_dir / "run.json").write_text(json.dumps(record))
    assert _data_read(Run.load(run_dir)) == "credit-{SPAN}.csv (Status)"


def test_diff_of_declared_pipelines_says_each_changed_field_of_a_node_by_its_id(tmp_path):
    """A user trial: `kflow diff` of two runs of a declared pipeline printed the whole components list twice, on one
    line, for one parameter changed. Now each changed field is a line named by the node's id, and a list of mappings
    without ids by each one's place."""
    from kflow.pipeline import api
    from kflow.pipeline.cli.history import diff_runs, format_diff
    from kflow.pipeline.runners.run_record import Run
    from tests.pipeline.toy.components import Produce

    for epochs, slices in ((1, [{"by": "label"}, {"by": "colour"}]), (3, [{"by": "label"}, {"by": "size"}])):
        config = {
            "components": [{"id": "ingest", "type": "ingest"}, {"id": "train", "parameters": {"epochs": epochs}}],
            "evaluator": {"slices": slices},
        }
        api.run(api.Pipeline("toy", [Produce("produce")], metadata={"config": config}), tmp_path / "runs")
    first, second = (Run.load(path.parent) for path in sorted((tmp_path / "runs").glob("toy/*/run.json")))
    diff = diff_runs(first, second)
    assert diff["parameters"] == {
        "components.train.parameters.epochs": {"a": 1, "b": 3},
        "evaluator.slices[1].by": {"a": "colour", "b": "size"},
    }
    assert "  components.train.parameters.epochs: 1 → 3" in format_diff(diff).splitlines()


def test_runs_of_a_config_lists_its_pipelines_runs(tmp_path, capsys):
    """A user trial: `kflow runs ff.yaml` answered `ff.yaml is not a folder of runs`; a config names its pipeline's
    folder (pipeline_root/name), which its runs are listed from."""
    import yaml

    from kflow.pipeline import api
    from kflow.pipeline.cli.main import main
    from tests.pipeline.toy.components import Produce

    api.run(api.Pipeline("toy", [Produce("produce")]), tmp_path / "runs")
    iris = str(REPO / "pipeline" / "configs" / "data" / "iris.csv")
    data = {"dataset": "csv", "source": {"path": iris}, "label": "species"}
    config = {"name": "toy", "pipeline_root": str(tmp_path / "runs"), "data": data}
    (tmp_path / "toy.yaml").write_text(yaml.safe_dump(config))
    assert main(["runs", str(tmp_path / "toy.yaml")]) == 0
    header, *rows = capsys.readouterr().out.strip().splitlines()
    assert header.split()[:2] == ["pipeline", "run"] and len(rows) == 1 and rows[0].split()[0] == "toy"


def test_diff_takes_a_pipeline_and_run_ids(tmp_path, capsys):
    """A user trial: `kflow diff runs/wages RUN_A RUN_B` printed kflow's usage, `kflow diff runs/wages RUN` said the
    folder holds no run.json. A pipeline (its folder, a run folder, its config) and 0 to 2 run ids now say which."""
    import yaml

    from kflow.pipeline import api
    from kflow.pipeline.cli.main import main
    from tests.pipeline.toy.components import Produce

    for epochs in (1, 2, 3):
        config = {"trainer": {"epochs": epochs}}
        api.run(api.Pipeline("toy", [Produce("produce")], metadata={"config": config}), tmp_path / "runs")
    first, second, third = sorted(path.parent.name for path in (tmp_path / "runs" / "toy").glob("*/run.json"))
    folder = tmp_path / "runs" / "toy"
    data = {
        "dataset": "csv",
        "source": {"path": str(REPO / "pipeline" / "configs" / "data" / "iris.csv")},
        "label": "species",
    }
    config = {"name": "toy", "pipeline_root": str(tmp_path / "runs"), "data": data}
    (tmp_path / "toy.yaml").write_text(yaml.safe_dump(config))

    def said(*arguments):
        assert main(["diff", *map(str, arguments), "--json"]) == 0
        difference = json.loads(capsys.readouterr().out)
        return difference["a"], difference["b"], difference["parameters"]["trainer.epochs"]

    assert said(folder) == (second, third, {"a": 2, "b": 3})  # the last two
    assert said(tmp_path / "toy.yaml") == (second, third, {"a": 2, "b": 3})  # a config's pipeline
    assert said(folder, first) == (first, third, {"a": 1, "b": 3})  # that run against the newest
    assert said(folder, first, second) == (first, second, {"a": 1, "b": 2})
    assert said(folder / first, folder / third) == (first, third, {"a": 1, "b": 3})  # two run folders, as before
    assert main(["diff", str(folder), "20991231-000000-000000-zzzz"]) == 2
    assert f"{folder} holds no run 20991231-000000-000000-zzzz (the newest: {third}" in capsys.readouterr().err
