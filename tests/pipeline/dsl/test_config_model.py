"""The config model is the one declaration: the schema is generated from it, the Trainer takes its defaults from
it, and a setting written in YAML reaches the executor's typed settings unchanged."""

import json
import typing
from pathlib import Path

import yaml

from kflow.components.models import MODELS
from kflow.components.trainer import Trainer
from kflow.components.trainer.config import ClusterConfig, TrainConfig, TrainerSettings
from kflow.pipeline.app.schema import config_schema_text
from kflow.pipeline.app.standard_pipeline import build_pipeline
from kflow.pipeline.cli.main import main
from kflow.pipeline.dsl.config import load_config
from kflow.pipeline.dsl.config_model import ModelName, TrainerSection
from kflow.pipeline.runners.kfp_entrypoint import bind_node

REPO = Path(__file__).resolve().parents[3]
COMMITTED = REPO / "schemas" / "config.schema.json"


def test_the_committed_schema_is_the_generated_one():
    assert COMMITTED.read_text() == config_schema_text(), (
        "schemas/config.schema.json is stale: regenerate it with `kflow schema -o schemas/config.schema.json`"
    )


def test_kflow_schema_prints_and_writes_it(capsys, tmp_path):
    assert main(["schema"]) == 0
    assert json.loads(capsys.readouterr().out) == json.loads(COMMITTED.read_text())
    assert main(["schema", "-o", str(tmp_path / "schema.json")]) == 0
    assert (tmp_path / "schema.json").read_text() == COMMITTED.read_text()


def test_the_model_enum_is_the_model_registry():
    assert set(typing.get_args(ModelName)) == set(MODELS)


def test_the_trainer_takes_its_defaults_from_the_config_model():
    declared, schema = TrainerSection(), json.loads(COMMITTED.read_text())["properties"]["trainer"]["properties"]
    training, cluster = TrainConfig(), ClusterConfig()
    assert training.epochs == declared.epochs == schema["epochs"]["default"] == 3
    assert (
        training.learning_rate
        == declared.optimizer.learning_rate
        == schema["optimizer"]["properties"]["learning_rate"]["default"]
    )
    assert cluster.max_restarts == declared.max_restarts == schema["max_restarts"]["default"]
    assert Trainer.spec.parameters["epochs"].default == declared.epochs
    assert (
        Trainer.spec.parameters["stall_timeout"].description == TrainerSection.model_fields["stall_timeout"].description
    )


SET = {
    "epochs": 7,
    "batch_size": 64,
    "steps_per_epoch": 5,
    "optimizer": {"name": "sgd", "learning_rate": 0.05, "schedule": "cosine", "warmup_steps": 3},
    "shuffle_buffer": 0,
    "seed": 9,
    "model": "mnist_convnet",
    "model_options": {"dropout": 0.25},
    "early_stopping_patience": 2,
    "early_stopping_monitor": "val_accuracy",
    "checkpoint_every_steps": 11,
    "log_every_steps": 13,
    "stall_timeout": 120.5,
    "max_restarts": 1,
}


def expected_settings():
    return {
        **{key: value for key, value in SET.items() if key not in ("optimizer", "model")},
        "model_name": "mnist_convnet",
        "optimizer": "sgd",
        "learning_rate": 0.05,
        "schedule": "cosine",
        "warmup_steps": 3,
        "dataset": "mnist",
        "weight_decay": TrainerSection().optimizer.weight_decay,  # unset in the YAML: the declared default
        "workers": TrainerSection().workers,
    }


def flat(settings: TrainerSettings) -> dict:
    groups = (settings.model.__dict__, settings.training.__dict__, settings.cluster.__dict__)
    return {key: value for group in groups for key, value in group.items()}


def test_a_trainer_setting_walks_from_yaml_to_the_executor_unchanged(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({"name": "walk", "data": {"dataset": "mnist"}, "trainer": SET}))
    config = load_config(path)
    train = build_pipeline(config, local_data=False).node("train")

    # kflow run: the local runner hands the executor the node's parameters (as JSON to a training process).
    local = TrainerSettings.from_parameters(json.loads(json.dumps(train.parameters)))
    # Kubeflow: the entrypoint reads each parameter from the text KFP substitutes, and binds it as kflow run does.
    texts = {
        name: value if isinstance(value, str) else json.dumps(value)
        for name, value in train.parameters.items()
        if value is not None
    }
    inputs = {"examples": "/in/examples", "schema": "/in/schema"}
    on_kubeflow = TrainerSettings.from_parameters(bind_node(Trainer, inputs, texts).parameters)

    for settings in (local, on_kubeflow):
        values = flat(settings)
        assert {key: values[key] for key in expected_settings()} == expected_settings()
        assert isinstance(values["epochs"], int) and isinstance(values["stall_timeout"], float)
    assert local == on_kubeflow
