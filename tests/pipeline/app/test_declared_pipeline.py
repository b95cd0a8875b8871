"""Pipelines declared under `components:`: validation with paths, conditions, parallel waves, --only, compile."""

from __future__ import annotations

import json
import os
import textwrap
from datetime import datetime
from pathlib import Path

import pytest
import yaml

from kflow.pipeline import api
from kflow.pipeline.app.standard_pipeline import build_pipeline
from kflow.pipeline.cli.main import main
from kflow.pipeline.dsl.config import ConfigError, load_config
from tests.conftest import REPO
from tests.pipeline.compiler.kfp_player import play
from tests.pipeline.toy.components import Add, Double, Judge, Produce

TOY = "tests.pipeline.toy.components"
IMAGE = "registry.example.com/kflow:0.1.0"


def toy_config(tmp_path: Path, value: int = 3, at_least: int = 2, extra: str = "") -> Path:
    """produce → judge; double runs only if judge blessed; add consumes double's output."""
    path = tmp_path / "toy.yaml"
    path.write_text(
        textwrap.dedent(f"""
        name: toy-dag
        pipeline_root: {tmp_path / "runs"}
        components:
          - {{id: produce, type: "{TOY}:Produce", parameters: {{value: {value}}}}}
          - id: judge
            type: "{TOY}:Judge"
            inputs: {{numbers: produce.numbers}}
            parameters: {{at_least: {at_least}}}
          - id: double
            type: "{TOY}:Double"
            inputs: {{numbers: produce.numbers}}
            run_if: judge.blessing
          - id: add
            type: "{TOY}:Add"
            inputs: {{left: produce.numbers, right: double.doubled}}
            parameters: {{add: 1}}
        """)
        + extra
    )
    return path


def run_record(tmp_path: Path) -> dict:
    (run_json,) = sorted((tmp_path / "runs" / "toy-dag").glob("*/run.json"))[-1:]
    return json.loads(run_json.read_text())


def statuses(record: dict) -> dict[str, str]:
    return {node: entry["status"] for node, entry in record["components"].items()}


def test_a_blessed_condition_runs_the_branch_and_a_re_run_is_fully_cached(tmp_path):
    config = toy_config(tmp_path, value=3, at_least=2)
    assert main(["run", str(config)]) == 0
    record = run_record(tmp_path)
    assert statuses(record) == {"produce": "succeeded", "judge": "succeeded", "double": "succeeded", "add": "succeeded"}
    assert (Path(record["components"]["add"]["outputs"]["total"]["uri"]) / "value.txt").read_text() == "10"

    assert main(["run", str(config)]) == 0
    assert set(statuses(run_record(tmp_path)).values()) == {"cached"}


def test_a_refused_condition_skips_the_node_and_what_consumes_it(tmp_path, capsys):
    assert main(["run", str(toy_config(tmp_path, value=1, at_least=2))]) == 1  # evaluator.on_not_blessed: fail
    assert "kflow: error: judge: the model is NOT BLESSED" in capsys.readouterr().err
    record = run_record(tmp_path)
    assert statuses(record) == {"produce": "succeeded", "judge": "succeeded", "double": "skipped", "add": "skipped"}
    assert record["components"]["double"]["summary"]["skipped"] == "judge.blessing: the model is not blessed"
    assert record["components"]["add"]["summary"]["skipped"] == "double was skipped"
    assert not (Path(record["components"]["produce"]["outputs"]["numbers"]["uri"]).parent.parent / "double").exists()


def test_set_addresses_a_component_by_its_id(tmp_path):
    config = load_config(toy_config(tmp_path), ["components.produce.parameters.value=9"])
    assert build_pipeline(config).node("produce").parameters["value"] == 9
    with pytest.raises(ConfigError, match=r"no entry with id 'prodce'; did you mean produce\?"):
        load_config(toy_config(tmp_path), ["components.prodce.parameters.value=9"])


BAD = {
    "duplicate id": (
        f'- {{id: a, type: "{TOY}:Produce"}}\n- {{id: a, type: "{TOY}:Produce"}}',
        "components[1].id: duplicate id 'a'",
    ),
    "unknown type": (
        "- {id: a, type: trainr}",
        "components.a.type: unknown component type 'trainr'; did you mean trainer?",
    ),
    "type not importable": ('- {id: a, type: "tests.nowhere:X"}', "components.a.type: cannot import 'tests.nowhere:X'"),
    "missing node": (
        f'- {{id: a, type: "{TOY}:Double", inputs: {{numbers: prodce.numbers}}}}',
        "components.a.inputs.numbers: no component 'prodce'",
    ),
    "missing output": (
        f'- {{id: p, type: "{TOY}:Produce"}}\n- {{id: a, type: "{TOY}:Double", inputs: {{numbers: p.numbrs}}}}',
        "components.a.inputs.numbers: p (Produce) has no output 'numbrs'; did you mean numbers?",
    ),
    "type mismatch": (
        f'- {{id: p, type: "{TOY}:Produce"}}\n- {{id: j, type: "{TOY}:Judge", inputs: {{numbers: p.numbers}}}}\n'
        f'- {{id: a, type: "{TOY}:Double", inputs: {{numbers: j.blessing}}}}',
        "components.a.inputs.numbers: Double's numbers is Examples, but j.blessing is ModelBlessing",
    ),
    "cycle": (
        f'- {{id: a, type: "{TOY}:Double", inputs: {{numbers: b.doubled}}}}\n'
        f'- {{id: b, type: "{TOY}:Double", inputs: {{numbers: a.doubled}}}}',
        "components.a: its inputs form a cycle: a → b → a",
    ),
    "unwired input": (f'- {{id: a, type: "{TOY}:Double"}}', "components.a.inputs.numbers: is required (Examples"),
    "unknown parameter": (
        f'- {{id: a, type: "{TOY}:Produce", parameters: {{valeu: 1}}}}',
        "components.a.parameters.valeu: Produce has no such parameter; did you mean value?",
    ),
    "parameter type": (
        f'- {{id: a, type: "{TOY}:Produce", parameters: {{value: three}}}}',
        "components.a.parameters.value: must be int, got str ('three')",
    ),
    "run_if not a blessing": (
        f'- {{id: p, type: "{TOY}:Produce"}}\n- {{id: a, type: "{TOY}:Produce", run_if: p.numbers}}',
        "components.a.run_if: wants a ModelBlessing output, but p.numbers is Examples",
    ),
    "component's own check": (
        "- {id: t, type: trainer, parameters: {dataset: mnist, model_name: mnist_convnet, strategy: mirored}}\n"
        '- {id: p, type: "tests.pipeline.toy.components:Produce"}',
        "components.t.inputs.examples: is required",
    ),
}


@pytest.mark.parametrize("case", list(BAD))
def test_validate_names_each_dag_error_by_its_path(case, tmp_path, capsys):
    components, expected = BAD[case]
    path = tmp_path / "bad.yaml"
    path.write_text("name: bad\ncomponents:\n" + textwrap.indent(components, "  ") + "\n")
    assert main(["validate", str(path)]) == 2
    assert expected in capsys.readouterr().err


def test_a_trainer_node_reports_its_own_setting_checks(tmp_path, capsys):
    path = tmp_path / "bad.yaml"
    path.write_text(
        "name: bad\ndata: {dataset: mnist, source: {format: sklearn_digits}}\ncomponents:\n"
        "  - {id: ingest, type: ingest}\n"
        "  - {id: t, type: trainer, inputs: {examples: ingest.examples, schema: ingest.schema},"
        " parameters: {strategy: mirored}}\n"
    )
    assert main(["validate", str(path)]) == 2
    assert "components.t.parameters: unknown strategy 'mirored'" in capsys.readouterr().err


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="parallel branches need two cores")
def test_independent_nodes_overlap_without_any_beam_option(tmp_path):
    first = Produce("first", parameters={"value": 1, "sleep": 1.5})
    second = Produce("second", parameters={"value": 2, "sleep": 1.5})
    total = Add("total", left=first.outputs["numbers"], right=second.outputs["numbers"])
    result = api.run(api.Pipeline("toy-dag", [first, second, total]), tmp_path / "runs")
    entries = result.record["components"]
    (a_start, a_end), (b_start, b_end) = (
        [datetime.fromisoformat(entries[n][key]) for key in ("started_at", "finished_at")] for n in ("first", "second")
    )
    assert a_start < b_end and b_start < a_end, "the two branches ran one after the other"


def test_only_runs_one_node_on_its_upstream_cached_outputs(tmp_path, capsys):
    config = toy_config(tmp_path)
    # Nothing cached yet: a refusal of the arguments (exit 2, one line, no run recorded), not a failed run.
    assert main(["run", str(config), "--only", "add"]) == 2
    said = capsys.readouterr().err
    assert said.count("\n") == 1 and "--only add: produce, judge, double have no cached outputs for this config (new)" \
        in said and said.rstrip().endswith("run them first: kflow run --until double"), said  # fmt: skip
    assert not list(tmp_path.rglob("run.json"))
    # A skipped ancestor is no missing one: judge refuses to bless 1, so double is skipped, and so is add (the
    # runner's own verdict), not a refusal to run --until double, which would skip it again.
    (tmp_path / "refused").mkdir()
    refused = toy_config(tmp_path / "refused", value=1)
    assert main(["run", str(refused)]) == 1  # not blessed: the gate's exit
    assert main(["run", str(refused), "--only", "add"]) != 2, capsys.readouterr().err
    assert statuses(run_record(tmp_path / "refused"))["add"] == "skipped"
    assert main(["run", str(config)]) == 0
    assert main(["run", str(config), "--only", "add", "--set", "components.add.parameters.add=5"]) == 0
    record = run_record(tmp_path)
    assert statuses(record) == {"produce": "cached", "judge": "cached", "double": "cached", "add": "succeeded"}
    assert (Path(record["components"]["add"]["outputs"]["total"]["uri"]) / "value.txt").read_text() == "14"


@pytest.mark.parametrize("value, played", [(3, True), (1, False)])
def test_the_compiled_condition_plays_like_the_local_run(value, played, tmp_path):
    package = tmp_path / "pipeline.yaml"
    assert main(["compile", str(toy_config(tmp_path, value=value)), "-o", str(package), "--image", IMAGE]) == 0
    outputs = play(package, tmp_path / "play", cwd=REPO, timeout=120)
    assert outputs["judge"]["blessing_blessed"] == ("true" if played else "false")
    groups = [task for task, result in outputs.items() if task.startswith("condition")]
    assert len(groups) == 1 and outputs[groups[0]] == ({} if played else {"skipped": True})
    assert ("add" in outputs) is played
    if played:
        assert (Path(outputs["add"]["total"].path) / "value.txt").read_text() == "10"


def test_the_yaml_and_the_python_pipeline_compile_to_the_same_file(tmp_path):
    yaml_package = tmp_path / "yaml.yaml"
    assert main(["compile", str(toy_config(tmp_path)), "-o", str(yaml_package), "--image", IMAGE]) == 0
    produce = Produce("produce", parameters={"value": 3})
    judge = Judge("judge", numbers=produce.outputs["numbers"], parameters={"at_least": 2})
    double = Double("double", numbers=produce.outputs["numbers"], run_if=judge.outputs["blessing"])
    add = Add("add", left=produce.outputs["numbers"], right=double.outputs["doubled"], parameters={"add": 1})
    python_package = api.compile(
        api.Pipeline("toy-dag", [produce, judge, double, add]), tmp_path / "python.yaml", image=IMAGE
    )
    assert python_package.read_bytes() == yaml_package.read_bytes()


def test_the_compare_config_and_its_python_twin_compile_to_the_same_file(tmp_path):
    """pipeline/configs/mnist_compare.yaml: both branches, both conditions; no training needed to compile."""
    config = REPO / "pipeline" / "configs" / "mnist_compare.yaml"
    yaml_package = tmp_path / "yaml.yaml"
    assert main(["compile", str(config), "-o", str(yaml_package), "--image", IMAGE]) == 0
    root = Path.cwd()
    ingest = api.MnistIngest("ingest", parameters={"shards_per_split": 4})
    data = {"examples": ingest.outputs["examples"], "schema": ingest.outputs["schema"]}
    transform = api.Transform("transform", **data, parameters={"dataset": "mnist", "options": {}, "beam_args": []})
    graph = {"transform_graph": transform.outputs["transform_graph"]}
    common = {"dataset": "mnist", "model_name": "mnist_convnet", "epochs": 12, "learning_rate": 0.002}
    train_mwms = api.Trainer(
        "train_mwms", **data, **graph, parameters={**common, "strategy": "multi_worker_mirrored", "workers": 2}
    )
    train_jax = api.Trainer(
        "train_jax",
        **data,
        **graph,
        parameters={**common, "strategy": "keras_data_parallel", "workers": 1, "devices": 2},
    )
    nodes = [ingest, transform, train_mwms, train_jax]
    for name, train, other, bound in (
        ("mwms", train_mwms, train_jax, "max_drop"),
        ("jax", train_jax, train_mwms, "min_gain"),
    ):
        thresholds = {"accuracy": {"lower_bound": 0.9, bound: 0}}
        evaluate = api.Evaluator(
            f"evaluate_{name}",
            **data,
            model=train.outputs["model"],
            model_run=train.outputs["model_run"],
            baseline_model=other.outputs["model"],
            parameters={"thresholds": thresholds, "slices": [{"by": "label"}], "report_title": "mnist-compare"},
        )
        nodes.append(evaluate)
    for name, train in (("mwms", train_mwms), ("jax", train_jax)):
        blessing = nodes[[n.id for n in nodes].index(f"evaluate_{name}")].outputs["blessing"]
        destination = str(root / "runs" / "serving")
        nodes.append(
            api.Pusher(
                f"push_{name}",
                model=train.outputs["model"],
                blessing=blessing,
                run_if=blessing,
                parameters={"push_destination": destination, "model_name": "mnist"},
            )
        )
    python_package = api.compile(api.Pipeline("mnist-compare", nodes), tmp_path / "python.yaml", image=IMAGE)
    assert python_package.read_bytes() == yaml_package.read_bytes()

    ir = next(yaml.safe_load_all(yaml_package.read_text()))
    tasks = ir["root"]["dag"]["tasks"]
    assert {"train-mwms", "train-jax", "evaluate-mwms", "evaluate-jax"} <= set(tasks)
    conditions = {name: task["triggerPolicy"]["condition"] for name, task in tasks.items() if "triggerPolicy" in task}
    assert sorted(conditions.values()) == [
        "inputs.parameter_values['pipelinechannel--evaluate-jax-blessing_blessed'] == 'true'",
        "inputs.parameter_values['pipelinechannel--evaluate-mwms-blessing_blessed'] == 'true'",
    ]
    from kfp import components

    assert components.load_component_from_file(str(yaml_package)).name == "mnist-compare"


def test_run_time_parameters_are_pipeline_inputs_that_a_played_run_overrides(tmp_path):
    extra = "kubeflow: {parameters: [components.produce.parameters.value, components.add.parameters.add]}\n"
    package = tmp_path / "pipeline.yaml"
    assert main(["compile", str(toy_config(tmp_path, value=3, extra=extra)), "-o", str(package), "--image", IMAGE]) == 0
    ir = next(yaml.safe_load_all(package.read_text()))
    inputs = ir["root"]["inputDefinitions"]["parameters"]
    assert {name: spec["defaultValue"] for name, spec in inputs.items()} == {
        "components_add_parameters_add": 1,
        "components_produce_parameters_value": 3,
    }
    played = play(
        package, tmp_path / "play", cwd=REPO, timeout=120, arguments={"components_produce_parameters_value": 7}
    )
    assert (Path(played["produce"]["numbers"].path) / "value.txt").read_text() == "7"
    assert (Path(played["add"]["total"].path) / "value.txt").read_text() == "22"  # 7 + 2 × 7 + 1


def test_a_run_time_parameter_must_name_a_component_parameter_with_a_value(tmp_path, capsys):
    extra = "kubeflow: {parameters: [components.produce.parameters.valeu, trainer.epochs]}\n"
    assert (
        main(["compile", str(toy_config(tmp_path, extra=extra)), "-o", str(tmp_path / "p.yaml"), "--image", IMAGE]) == 2
    )
    err = capsys.readouterr().err
    assert "kubeflow.parameters[0]: 'components.produce.parameters.valeu' sets no component parameter" in err
    assert "kubeflow.parameters[1]: 'trainer.epochs' sets no component parameter" in err


def test_log_lines_of_nodes_running_at_once_name_their_node(caplog):
    """Two evaluators both log `evaluate: …`: while a wave runs several nodes, each line says whose it is,
    also from a thread the node starts in its context (the Trainer's relay of its workers' output)."""
    import contextvars
    import logging
    import threading

    from kflow.pipeline.runners.node_runner import CURRENT_NODE, node_tagged_logs

    log = logging.getLogger("kflow")

    def node_work(node_id: str) -> None:
        CURRENT_NODE.set(node_id)
        log.info("evaluate: accuracy %.2f", 0.5)
        relay = threading.Thread(target=contextvars.copy_context().run, args=(log.info, "[worker-0] epoch 1"))
        relay.start()
        relay.join()

    with caplog.at_level(logging.INFO, logger="kflow"), node_tagged_logs():
        threads = [threading.Thread(target=contextvars.copy_context().run, args=(node_work, n)) for n in ("a", "b")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        log.info("a line of no node")
    lines = sorted(record.getMessage() for record in caplog.records)
    assert lines == [
        "[a] [worker-0] epoch 1",
        "[a] evaluate: accuracy 0.50",
        "[b] [worker-0] epoch 1",
        "[b] evaluate: accuracy 0.50",
        "a line of no node",
    ]


def test_a_declared_evaluator_takes_evaluator_baseline_as_the_standard_pipelines_does(tmp_path):
    """A user trial: a declared evaluator ignored evaluator.baseline (latest_blessed, and a Model folder): its change
    checks passed with no baseline, and under require_baseline no run could ever bless."""
    model = tmp_path / "earlier" / "train" / "model"
    model.mkdir(parents=True)
    (model / "model.keras").write_bytes(b"a model")

    def evaluator_node(baseline):
        config = {"name": "iris-dag", "pipeline_root": str(tmp_path / "runs"),
                  "data": {"dataset": "csv", "source": {"path": str(REPO / "pipeline/configs/data/iris.csv")},
                           "label": "species"},
                  "evaluator": {"baseline": baseline},
                  "components": [
                      {"id": "ingest", "type": "ingest"},
                      {"id": "train", "type": "trainer", "inputs": {"examples": "ingest.examples",
                                                                    "schema": "ingest.schema"}},
                      {"id": "evaluate", "type": "evaluator",
                       "inputs": {"examples": "ingest.examples", "schema": "ingest.schema",
                                  "model": "train.model"}}]}  # fmt: skip
        (tmp_path / "dag.yaml").write_text(yaml.safe_dump(config))
        pipeline = build_pipeline(load_config(tmp_path / "dag.yaml"), local_runs=True)
        return {node.id: node for node in pipeline.components}["evaluate"]

    assert evaluator_node(str(model)).parameters["baseline_model_uri"] == str(model.resolve())
    latest = evaluator_node("latest_blessed")
    assert latest.parameters["baseline_model_uri"] is None and latest.run_time_parameters is not None
    assert evaluator_node("none").parameters["no_baseline_reason"] == "evaluator.baseline is none"
    with pytest.raises(ConfigError, match="evaluator.baseline: .* is not a Model folder"):
        evaluator_node(str(tmp_path / "earlier"))


def test_a_declared_example_validator_takes_data_on_anomaly(tmp_path):
    """The Trainer's refusal of blocking anomalies says 'set data.on_anomaly: warn to train anyway'; a user trial set
    it in a declared pipeline and nothing changed (only the node's own parameter counted). Its own still wins."""
    config = {"name": "iris-dag", "pipeline_root": str(tmp_path / "runs"),
              "data": {"dataset": "csv", "source": {"path": str(REPO / "pipeline/configs/data/iris.csv")},
                       "label": "species", "on_anomaly": "warn"},
              "components": [
                  {"id": "ingest", "type": "ingest"},
                  {"id": "stats", "type": "statistics_gen", "inputs": {"examples": "ingest.examples"}},
                  {"id": "validate", "type": "example_validator",
                   "inputs": {"statistics": "stats.statistics", "schema": "ingest.schema"}}]}  # fmt: skip
    (tmp_path / "dag.yaml").write_text(yaml.safe_dump(config))
    nodes = {node.id: node for node in build_pipeline(load_config(tmp_path / "dag.yaml")).components}
    assert nodes["validate"].parameters["on_anomaly"] == "warn"
    config["components"][2]["parameters"] = {"on_anomaly": "fail"}
    (tmp_path / "dag.yaml").write_text(yaml.safe_dump(config))
    nodes = {node.id: node for node in build_pipeline(load_config(tmp_path / "dag.yaml")).components}
    assert nodes["validate"].parameters["on_anomaly"] == "fail"


def test_a_node_refused_says_its_own_problem_not_its_consumers_knock_on(tmp_path, capsys):
    """A user trial: an unknown parameter on the schema node also said 'validate: input 'schema' (Schema) is not
    wired', which it was, sending the user to the wrong node."""
    config = yaml.safe_load(toy_config(tmp_path).read_text())
    config["components"][0]["parameters"]["bogus"] = 1  # produce, which judge, double and add read
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(config))
    assert main(["validate", str(tmp_path / "bad.yaml")]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert any("components.produce.parameters.bogus: Produce has no such parameter" in line for line in lines), lines
    assert not any("not wired" in line for line in lines), lines


def test_a_user_component_package_not_importable_says_how_to_make_it_so(tmp_path, capsys):
    """A user trial: a package beside the config (mycomp/) was 'No module named mycomp', and nothing said that it
    must be installed or on PYTHONPATH."""
    config = yaml.safe_load(toy_config(tmp_path).read_text())
    config["components"][0]["type"] = "mycomp_not_installed.bad:report"
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(config))
    assert main(["validate", str(tmp_path / "bad.yaml")]) == 2
    said = capsys.readouterr().err
    assert "cannot import 'mycomp_not_installed.bad:report': No module named 'mycomp_not_installed'" in said
    assert "installed, or its folder on PYTHONPATH, e.g. PYTHONPATH=. kflow run" in said


@pytest.mark.parametrize("bad", ["../../escape", "x/y", "Bad Name", "train-a", ""])
def test_the_python_api_refuses_a_node_id_a_config_refuses(bad):
    """A user trial: api.CsvIngest("../../escape", ...) wrote outside the run's folder; the API took any id and name,
    where a config takes ^[a-z][a-z0-9_]*$ (train_a and train-a compiled to KFP tasks train-a and train-a-2)."""
    with pytest.raises(ValueError, match="component id .*: lowercase letters, digits and _"):
        Produce(bad, parameters={"value": 1})


def test_the_python_api_refuses_a_pipeline_name_a_config_refuses():
    with pytest.raises(ValueError, match="pipeline name '../x': lowercase letters, digits and -"):
        api.Pipeline("../x", [Produce("produce", parameters={"value": 1})])


def test_predict_says_when_the_model_was_trained_on_a_node_it_does_not_run(tmp_path):
    """A user trial: a declared pipeline's own node capped Price before the Trainer; kflow predict fed new rows raw
    (a Price of 190 the model never saw), without a word."""
    from kflow.pipeline.app.model_choice import ChosenModel, unrun_preparation
    from kflow.pipeline.dsl.artifacts import Model

    def run_of(producer: str) -> ChosenModel:
        run_dir = tmp_path / producer / "20261202-000000-000000-aaaa"
        run_dir.mkdir(parents=True)

        def ref(kind, node, output):
            return {"type": kind, "uri": str(run_dir / node / output)}

        raw, capped = ref("Examples", "ingest", "examples"), ref("Examples", "cap", "capped")
        components = {
            "ingest": {"status": "succeeded", "parameters": {"source_path": "/data/carseats.csv"},
                       "outputs": {"examples": raw}},
            "cap": {"status": "succeeded", "parameters": {"cap": 140}, "inputs": {"examples": raw},
                    "outputs": {"capped": capped}},
            "train": {"status": "succeeded", "inputs": {"examples": capped if producer == "cap" else raw},
                      "outputs": {"model": ref("Model", "train", "model")}},
        }  # fmt: skip
        (run_dir / "run.json").write_text(
            json.dumps({"run_id": run_dir.name, "pipeline": "p", "components": components})
        )
        return ChosenModel(Model(run_dir / "train" / "model"), "the latest blessed model", str(run_dir))

    said = unrun_preparation(run_of("cap"))
    assert said and "trained on the examples of node 'cap', which prepares the ingest's: kflow predict does not" in said
    assert unrun_preparation(run_of("ingest")) is None


def test_the_python_api_names_the_nearest_parameter_and_exports_what_run_raises():
    """F19 of an earlier trial: a misspelled parameter listed only itself (`unknown parameters ['epoch']`), and
    `api.run`'s PipelineFailed had to be imported from the runner's module."""
    import pytest

    from kflow.pipeline import api
    from kflow.pipeline.runners.beam_dag_runner import PipelineFailed

    ingest = api.CsvIngest("ingest", parameters={"source_path": "iris.csv", "label": "species"})
    with pytest.raises(ValueError) as refused:
        api.Trainer("train", examples=ingest.outputs["examples"], schema=ingest.outputs["schema"],
                    parameters={"dataset": "csv", "epoch": 2})  # fmt: skip
    assert str(refused.value) == "train: unknown parameters ['epoch']; did you mean epochs?"
    assert api.PipelineFailed is PipelineFailed and "PipelineFailed" in dir(api)
