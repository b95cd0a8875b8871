"""The `tuner` section: validated at load (a key that is no trainer field exits 2, naming it and the nearest
field), the standard pipeline's `tune` node wired before `train`, a declared `type: tuner` node."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kflow.pipeline.app.standard_pipeline import build_pipeline
from kflow.pipeline.dsl.config import ConfigError, load_config
from tests.pipeline.cli.hostile_configs import kflow_in_process

IRIS_CSV = Path(__file__).resolve().parents[3] / "pipeline" / "configs" / "data" / "iris.csv"

SPACE = {
    "trainer.optimizer.learning_rate": {"log_uniform": [1e-4, 1e-2]},
    "trainer.model_options.hidden_units": {"choice": [[64], [128, 64]]},
    "trainer.batch_size": {"choice": [32, 64]},
}


def write_config(folder: Path, **sections) -> Path:
    config = {
        "name": "iris-tune",
        "pipeline_root": str(folder / "runs"),
        "data": {"dataset": "csv", "source": {"path": str(IRIS_CSV)}, "label": "species"},
        "trainer": {"model": "tabular_mlp", "epochs": 3},
        "tuner": {"search_space": SPACE, "parallel_trials": 2, "objective": {"metric": "val_accuracy"}},
        **sections,
    }
    path = folder / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def test_a_search_space_key_that_is_no_trainer_field_exits_2_naming_it_and_the_nearest(tmp_path):
    path = write_config(tmp_path)
    bad = "tuner.search_space={trainer.optimiser.learning_rate: {uniform: [0.001, 0.01]}, trainer.epoch: {int: [1, 3]}}"
    code, out, err = kflow_in_process("validate", str(path), "--set", bad)
    assert code == 2 and "Traceback" not in err
    lines = err.strip().splitlines()[1:]
    assert (
        "  tuner.search_space.trainer.epoch: not a trainer field a search can set; did you mean trainer.epochs?"
        in lines
    )
    assert (
        "  tuner.search_space.trainer.optimiser.learning_rate: not a trainer field a search can set; "
        "did you mean trainer.optimizer.learning_rate?"
    ) in lines
    with pytest.raises(ConfigError, match="trainer.workers: not a trainer field"):  # the cluster's shape is not tuned
        load_config(path, ["tuner.search_space={trainer.workers: {int: [1, 2]}}"])
    with pytest.raises(ConfigError, match="tuner.search_space.trainer.epochs: .* has too many properties"):
        load_config(path, ["tuner.search_space={trainer.epochs: {int: [1, 3], choice: [1]}}"])
    with pytest.raises(ConfigError, match=r"trainer.optimizer.learning_rate.log_uniform: a log scale needs low > 0"):
        load_config(path, ["tuner.search_space={trainer.optimizer.learning_rate: {log_uniform: [0, 0.1]}}"])
    with pytest.raises(ConfigError, match=r"tuner.search_space.trainer.epochs.int: low must be below high"):
        load_config(path, ["tuner.search_space={trainer.epochs: {int: [5, 2]}}"])
    assert kflow_in_process("validate", str(path))[0] == 0


def test_the_standard_pipeline_tunes_before_training_with_the_sections_settings(tmp_path):
    config = load_config(write_config(tmp_path))
    pipeline = build_pipeline(config)
    ids = [node.id for node in pipeline.topological_order()]
    assert ids.index("tune") < ids.index("train")
    tune, train = pipeline.node("tune"), pipeline.node("train")
    assert train.inputs["hyperparameters"].producer == "tune"
    assert tune.inputs["examples"].producer == "ingest" and tune.inputs["schema"].producer == "schema"
    assert tune.parameters["search_space"] == SPACE and tune.parameters["parallel_trials"] == 2
    assert tune.parameters["objective_metric"] == "val_accuracy" and tune.parameters["algorithm"] == "tpe"
    assert tune.parameters["trainer"]["epochs"] == 3 and tune.parameters["trainer"]["model_name"] == "tabular_mlp"
    # Without a tuner section: no tune node, and the recorded config is the one without it.
    plain = load_config(_without_tuner(tmp_path))
    assert "tune" not in [node.id for node in build_pipeline(plain).topological_order()]
    assert "tuner" not in plain.to_dict()


def test_trainer_hyperparameters_says_whether_the_trainer_takes_the_search_s_best(tmp_path):
    path = write_config(tmp_path)
    explicit = build_pipeline(load_config(path, ["trainer.hyperparameters=tuner"]))
    assert explicit.node("train").inputs["hyperparameters"].producer == "tune"
    # config: the search runs and is reported, the Trainer trains with the section's own settings.
    own = build_pipeline(load_config(path, ["trainer.hyperparameters=config"]))
    assert "tune" in [node.id for node in own.topological_order()]
    assert own.node("train").inputs.get("hyperparameters") is None
    assert "hyperparameters" not in own.node("train").parameters  # wiring, not a setting of the training
    code, _, err = kflow_in_process("validate", str(_without_tuner(tmp_path)), "--set", "trainer.hyperparameters=tuner")
    assert code == 2 and "Traceback" not in err
    assert "trainer.hyperparameters: tuner takes a search's best settings; the config has no tuner section" in err


def _without_tuner(folder: Path) -> Path:
    path = write_config(folder)
    config = yaml.safe_load(path.read_text())
    del config["tuner"]
    path.write_text(yaml.safe_dump(config))
    return path


def test_a_declared_tuner_node_takes_the_section_and_feeds_a_trainer(tmp_path):
    path = write_config(tmp_path)
    config = yaml.safe_load(path.read_text())
    config["components"] = [
        {"id": "ingest", "type": "ingest"},
        {
            "id": "search",
            "type": "tuner",
            "inputs": {"examples": "ingest.examples", "schema": "ingest.schema"},
            "parameters": {"max_trials": 4},
        },
        {
            "id": "train",
            "type": "trainer",
            "inputs": {
                "examples": "ingest.examples",
                "schema": "ingest.schema",
                "hyperparameters": "search.hyperparameters",
            },
        },
    ]
    path.write_text(yaml.safe_dump(config))
    pipeline = build_pipeline(load_config(path))
    assert pipeline.node("search").parameters["max_trials"] == 4
    assert pipeline.node("search").parameters["search_space"] == SPACE
    assert pipeline.node("train").inputs["hyperparameters"].producer == "search"


def test_trial_epochs_and_a_searched_trainer_epochs_are_one_line_keep_one(tmp_path):
    path = write_config(tmp_path)
    both = "tuner.search_space={trainer.epochs: {int: [1, 5]}}"
    code, _, err = kflow_in_process("validate", str(path), "--set", both, "--set", "tuner.trial_epochs=2")
    assert code == 2 and "tuner.trial_epochs: sets every trial's epochs, which the search space searches too" in err
    assert kflow_in_process("validate", str(path), "--set", "tuner.trial_epochs=2")[0] == 0
