"""The Trainer spec: its contract with the pipeline builder, and no TensorFlow at import time."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import fields

import pytest

from kflow.components.trainer import Trainer
from kflow.components.trainer.config import TrainerSettings
from kflow.pipeline.dsl.artifacts import (
    ExampleAnomalies,
    Examples,
    HyperParameters,
    Model,
    ModelRun,
    Schema,
    TransformGraph,
)
from kflow.pipeline.dsl.component import Channel
from kflow.pipeline.runners.failure import cause_line
from tests.components.fixtures import REPO


def test_spec_wiring_and_defaults():
    spec = Trainer.spec
    assert dict(spec.inputs) == {
        "examples": Examples,
        "schema": Schema,
        "anomalies": ExampleAnomalies,
        "hyperparameters": HyperParameters,
        "transform_graph": TransformGraph,
    }
    assert spec.optional_inputs == {"anomalies", "hyperparameters", "transform_graph"}
    assert dict(spec.outputs) == {"model": Model, "model_run": ModelRun}
    assert spec.executor == "kflow.components.trainer.executor:run"
    wired = {"examples": Channel("ingest", "examples", Examples), "schema": Channel("ingest", "schema", Schema)}
    with pytest.raises(ValueError, match="train: parameter 'dataset' is required"):
        Trainer("train", **wired)
    trainer = Trainer("train", parameters={"dataset": "mnist"}, **wired)
    assert trainer.parameters == {
        "model_name": None,  # The dataset's default model.
        "strategy": "default",
        "epochs": 3,
        "batch_size": 128,
        "optimizer": "adam",
        "learning_rate": 0.001,
        "steps_per_epoch": None,
        "steps_per_execution": None,  # chosen (steps_per_call.py): the custom loop times, model.fit sizes
        "seed": 42,
        "shuffle_buffer": 10000,
        "early_stopping_patience": None,
        "early_stopping_min_steps": None,
        "early_stopping_monitor": None,
        "dataset": "mnist",
        "model_options": {},
        "module": None,
        "module_source": None,
        "module_imports": None,
        "transform_graph_uri": None,  # set by the executor from its transform_graph input
        "warm_start": None,
        "warm_start_model_uri": None,
        "warm_start_reason": None,
        "workers": 2,
        "parameter_servers": 1,
        "devices": None,
        "max_restarts": 2,
        "weight_decay": 0.0,
        "schedule": "constant",
        "warmup_steps": 0,
        "mixed_precision": False,
        "checkpoint_every_steps": None,
        "log_every_steps": 100,
        "stall_timeout": 300.0,
        "mesh": None,
        "layout_map": None,
        "sidecar_evaluator": False,
    }
    assert not spec.parameters["log_every_steps"].affects_output


def test_every_parameter_lands_in_one_typed_settings_group():
    defaults = {
        name: parameter.default for name, parameter in Trainer.spec.parameters.items() if not parameter.required
    }
    settings = TrainerSettings.from_parameters({**defaults, "dataset": "mnist"})
    groups = (settings.model, settings.training, settings.cluster)
    assert sorted(item.name for group in groups for item in fields(group)) == sorted(Trainer.spec.parameters)
    changed = TrainerSettings.from_parameters(
        {"dataset": "mnist", "epochs": 7, "max_restarts": 0, "model_name": "bert_mlm"}
    )
    assert (changed.training.epochs, changed.cluster.max_restarts, changed.model.model_name) == (7, 0, "bert_mlm")
    with pytest.raises(TypeError, match="missing Trainer parameter.*: dataset$"):
        TrainerSettings.from_parameters({"epochs": 3})
    with pytest.raises(TypeError, match="unknown Trainer parameter.*: epoch "):
        TrainerSettings.from_parameters({"epoch": 3})
    with pytest.raises(ValueError, match="max_restarts must not be negative"):
        TrainerSettings.from_parameters({"dataset": "mnist", "max_restarts": -1})


def test_importing_the_component_does_not_import_tensorflow():
    code = "import sys, kflow.components.trainer; assert 'tensorflow' not in sys.modules and 'keras' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)


def test_the_trainer_refuses_data_with_anomalies_under_on_anomaly_fail(tmp_path):
    from kflow.components.trainer.executor import run

    anomalies = ExampleAnomalies(tmp_path / "anomalies")
    message = "the Examples have 2 anomalies against the schema (first: eval: colour: ...)"
    anomalies.write_json("anomalies.json", {"count": 2, "on_anomaly": "fail", "message": message, "splits": {}})
    artifacts = {name: cls(tmp_path / name) for name, cls in
                 (("examples", Examples), ("schema", Schema), ("model", Model), ("model_run", ModelRun))}  # fmt: skip
    with pytest.raises(ValueError, match=r"2 anomalies .* set data.on_anomaly: warn to train anyway") as refused:
        run(**artifacts, anomalies=anomalies, dataset="mnist")
    assert not (tmp_path / "model").exists()  # Refused before anything was written.
    # Said as the data's refusal, not as a ValueError of the Trainer's (a user trial read `failed: ValueError: ...`).
    assert cause_line(refused.value).startswith("the Examples have 2 anomalies against the schema")


def test_what_the_explicit_jax_loop_cannot_do_is_refused_before_training():
    with pytest.raises(ValueError, match="mixed_precision: .*float32"):
        TrainerSettings.from_parameters({"dataset": "mnist", "strategy": "jax_data_parallel", "mixed_precision": True})
    # It stops early and warm-starts as the other loops do (test_trainer_executor.py).
    settings = {"early_stopping_patience": 2, "warm_start": "latest_blessed"}
    TrainerSettings.from_parameters({"dataset": "mnist", "strategy": "jax_data_parallel", **settings})


def test_the_former_parameter_names_still_bind_with_a_warning(caplog):
    wired = {"examples": Channel("ingest", "examples", Examples), "schema": Channel("ingest", "schema", Schema)}
    trainer = Trainer("train", parameters={"task": "quora", "model_name": "text_classifier"}, **wired)
    assert (trainer.parameters["dataset"], trainer.parameters["model_name"]) == ("quora", "text_classifier")
    assert "task" not in trainer.parameters
    assert "train: parameter 'task' is now called 'dataset'" in caplog.text
    with pytest.raises(ValueError, match="train: parameters 'task' and 'dataset' are one parameter; keep 'dataset'"):
        Trainer("train", parameters={"task": "quora", "dataset": "mnist"}, **wired)
