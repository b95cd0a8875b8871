"""A dataset's own training recipe fills the trainer fields a config leaves out (pipeline/app/dataset_training.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from kflow.components.datasets.tabular.dataset import TRAINING
from kflow.pipeline.app.commands import compile_config
from kflow.pipeline.app.dataset_training import with_dataset_training
from kflow.pipeline.dsl.config import load_config
from kflow.pipeline.dsl.config_model import TrainerSection

REPO = Path(__file__).resolve().parents[3]
IRIS = REPO / "pipeline" / "configs" / "data" / "iris.csv"


def _config(tmp_path: Path, **sections) -> Path:
    shutil.copy(IRIS, tmp_path / "iris.csv")
    config = {"name": "mini", "data": {"dataset": "csv", "source": {"path": "iris.csv"}, "label": "species"}}
    config.update(sections)
    path = tmp_path / "mini.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def _trainer_fields(config) -> dict:
    trainer = config.to_dict()["trainer"]
    return {
        "trainer.epochs": trainer["epochs"],
        "trainer.early_stopping_patience": trainer["early_stopping_patience"],
        "trainer.batch_size": trainer["batch_size"],
        "trainer.optimizer.learning_rate": trainer["optimizer"]["learning_rate"],
    }


def test_a_table_config_without_a_trainer_section_trains_with_the_tabular_recipe(tmp_path):
    plain = load_config(_config(tmp_path))
    assert plain.trainer == TrainerSection()  # as loaded: the general defaults (3 epochs of 128)
    assert _trainer_fields(with_dataset_training(plain)) == TRAINING


def test_the_fields_a_config_sets_are_kept_and_the_rest_come_from_the_recipe(tmp_path):
    path = _config(tmp_path, trainer={"epochs": 5, "optimizer": {"name": "sgd"}})
    config = with_dataset_training(load_config(path, ["trainer.batch_size=128"]))
    fields = _trainer_fields(config)
    assert fields["trainer.epochs"] == 5  # set in the file
    assert fields["trainer.batch_size"] == 128  # set by --set, even to the general default
    assert fields["trainer.early_stopping_patience"] is None  # 5 epochs, as set: the recipe's stop goes with its 200
    assert fields["trainer.optimizer.learning_rate"] == TRAINING["trainer.optimizer.learning_rate"]
    patient = with_dataset_training(load_config(path, ["trainer.epochs=5", "trainer.early_stopping_patience=2"]))
    assert _trainer_fields(patient)["trainer.early_stopping_patience"] == 2
    only_patience = _config(tmp_path, trainer={"early_stopping_patience": 4})
    fields = _trainer_fields(with_dataset_training(load_config(only_patience)))
    assert (fields["trainer.epochs"], fields["trainer.early_stopping_patience"]) == (TRAINING["trainer.epochs"], 4)
    assert config.trainer.optimizer.name == "sgd"
    assert with_dataset_training(config) == config  # applied twice, the same


def test_a_folder_of_images_trains_with_the_image_recipe(tmp_path):
    from kflow.components.datasets.images import TRAINING as IMAGES

    path = tmp_path / "photos.yaml"
    path.write_text(yaml.safe_dump({"name": "photos", "data": {"dataset": "images", "source": {"path": "photos"}}}))
    trainer = with_dataset_training(load_config(path)).to_dict()["trainer"]
    assert {f"trainer.{name}": trainer[name] for name in ("epochs", "early_stopping_patience", "batch_size")} == IMAGES


@pytest.mark.parametrize("config", ["mnist.yaml", "quora.yaml", "wikitext2.yaml"])
def test_a_dataset_without_a_recipe_keeps_its_config(config):
    loaded = load_config(REPO / "pipeline" / "configs" / config)
    assert with_dataset_training(loaded) is loaded


def test_a_compiled_table_pipeline_carries_the_recipe(tmp_path):
    package = compile_config(str(_config(tmp_path)), tmp_path / "pipeline.yaml", [], "kflow:1")
    spec = next(yaml.safe_load_all(package.read_text()))
    constants = {
        name: value["runtimeValue"]["constant"]
        for name, value in spec["root"]["dag"]["tasks"]["train"]["inputs"]["parameters"].items()
        if "constant" in value.get("runtimeValue", {})
    }
    assert {f"trainer.{name}": constants[name] for name in ("epochs", "early_stopping_patience", "batch_size")} | {
        "trainer.optimizer.learning_rate": constants["learning_rate"]
    } == TRAINING


@pytest.mark.slow  # ~13 s; make test runs iris's shipped config (tests/docs, tests/browser)
def test_a_minimal_table_config_learns_iris(run_kflow, tmp_path):
    """The path and the label alone: iris to a test accuracy of at least 0.9 (3 steps of the general defaults
    scored 0.33), the record holding the recipe's values."""
    root = tmp_path / "runs"
    done = run_kflow("-q", "run", _config(tmp_path), "--pipeline-root", root)
    assert done.returncode == 0, done.stderr[-2000:]
    (run,) = [path for path in (root / "mini").iterdir() if not path.name.startswith(".")]
    assert _trainer_fields(_Recorded(json.loads((run / "run.json").read_text()))) == TRAINING
    history = json.loads(next(run.glob("train/model_run/history.json")).read_text())
    assert 3 < history["epochs"] <= TRAINING["trainer.epochs"]
    metrics = json.loads(next(run.glob("evaluate/evaluation/metrics.json")).read_text())
    assert metrics["accuracy"] >= 0.9


class _Recorded:
    """A run's recorded config, read as `_trainer_fields` reads a loaded one."""

    def __init__(self, record: dict):
        self.record = record

    def to_dict(self) -> dict:
        return self.record["metadata"]["config"]
