"""trainer.model_options holds lists and maps (any JSON-like value of scalars): they reach a user module's
build_model as they are, through `kflow run` and through a compiled pipeline's Trainer task; tabular_mlp takes
hidden_units as a list, and `kflow validate` refuses a value it would fail on, in one line naming the field."""

from __future__ import annotations

import json

import keras
import pytest

from kflow.components.trainer import Trainer
from kflow.components.trainer.config import ModelChoice, TrainerSettings
from kflow.pipeline.app.standard_pipeline import build_pipeline
from kflow.pipeline.cli.main import main
from kflow.pipeline.dsl.config import load_config
from kflow.pipeline.runners.kfp_entrypoint import bind_node
from tests.components.datasets.tabular_fixtures import write_iris
from tests.components.trainer.user_models import IRIS_CONFIG, csv_examples, module_source
from tests.pipeline.compiler.kfp_player import task_command


@pytest.fixture(scope="module")
def iris(tmp_path_factory):
    root = tmp_path_factory.mktemp("iris")
    return csv_examples(root, write_iris(root / "iris.csv"), "species")


OPTIONS = {"hidden_units": [12, 6], "block": {"activation": "relu", "widths": [4, 2]}, "names": ["a", "b"]}


def test_list_and_map_model_options_reach_the_user_module_locally_and_compiled(iris, tmp_path):
    examples, schema = iris
    module = tmp_path / "my_model.py"
    module.write_text(module_source())
    overrides = [f"trainer.module={module}", f"trainer.model_options={json.dumps(OPTIONS)}"]

    # Locally: the Trainer node `kflow run` builds from the config.
    nodes = {node.id: node for node in build_pipeline(load_config(IRIS_CONFIG, overrides)).components}
    local = TrainerSettings.from_parameters(nodes["train"].parameters).model
    assert local.model_options == OPTIONS

    # Compiled: the Trainer task's --parameter texts as a KFP backend substitutes them (the IR keeps numbers as
    # doubles, a struct as JSON), read back by the entrypoint as the pod does.
    args = ["--set", f"trainer.model_options={json.dumps(OPTIONS)}", "--set", f"trainer.module={module}"]
    assert main(["compile", str(IRIS_CONFIG), "-o", str(tmp_path / "p.yaml"), "--image", "kflow:0", *args]) == 0
    command = task_command(tmp_path / "p.yaml", "train", tmp_path / "root")
    texts = dict(command[i + 1].split("=", 1) for i, arg in enumerate(command) if arg == "--parameter")
    assert json.loads(texts["model_options"])["block"] == OPTIONS["block"]
    node = bind_node(Trainer, {"examples": str(examples.uri), "schema": str(schema.uri)}, texts)
    compiled = TrainerSettings.from_parameters(node.parameters).model
    assert compiled.model_options == OPTIONS and all(type(n) is int for n in compiled.model_options["hidden_units"])

    for choice in (local, compiled):
        task = choice.load_task(schema.file)
        task.prepare(examples, tmp_path / "assets")
        model = task.build_model()
        assert task.user_module.SEEN[-1]["block"] == OPTIONS["block"]  # A map arrives as a dict ...
        assert task.user_module.SEEN[-1]["names"] == ["a", "b"]  # ... a list as a list,
        hidden = [layer.units for layer in model.layers if isinstance(layer, keras.layers.Dense)][:-1]
        assert hidden == [12, 6]  # ... and builds the layers it says.


def test_tabular_mlp_takes_hidden_units_as_a_list_and_refuses_a_string_at_validate(tmp_path, capsys):
    assert main(["validate", str(IRIS_CONFIG), "--set", "trainer.model_options.hidden_units=[32, 16]"]) == 0
    capsys.readouterr()
    assert main(["validate", str(IRIS_CONFIG), "--set", 'trainer.model_options.hidden_units="16,8"']) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "trainer.model_options.hidden_units: must be a list of positive whole numbers" in line and '"16,8"' in line
    # The Trainer reads its parameters the same way when it starts (a compiled pipeline's pod: no validate).
    with pytest.raises(ValueError, match=r"^model_options.hidden_units: must be a list"):
        ModelChoice(dataset="csv", model_name="tabular_mlp", model_options={"hidden_units": [16, 0]})
    # A user module's options are its own: the same string goes to its build_model as it is.
    ModelChoice(dataset="csv", module="my_model.py", model_options={"hidden_units": "16,8"})


def test_model_options_nest_only_so_deep_and_hold_no_null(capsys):
    deep = "trainer.model_options.x=[[[[[1]]]]]"
    assert main(["validate", str(IRIS_CONFIG), "--set", deep]) == 2
    assert "trainer.model_options.x.0.0.0.0: must be a string or" in capsys.readouterr().err
    assert main(["validate", str(IRIS_CONFIG), "--set", "trainer.model_options.x=null"]) == 2
    assert "trainer.model_options.x: must be" in capsys.readouterr().err
