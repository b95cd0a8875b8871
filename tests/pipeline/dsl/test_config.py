import time
from pathlib import Path

import pytest
import yaml

from kflow.components.datasets import get_dataset
from kflow.pipeline.dsl.beam_options import named_runner
from kflow.pipeline.dsl.config import ConfigError, apply_override, load_config

CONFIGS = Path(__file__).resolve().parents[3] / "pipeline" / "configs"


def write(tmp_path, data):
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


MINIMAL = {"name": "mnist", "data": {"dataset": "mnist"}}


@pytest.mark.parametrize("name", ["demo.yaml", "mnist.yaml"])
def test_shipped_configs_are_valid(name):
    config = load_config(CONFIGS / name)
    assert config.data["dataset"] == "mnist"


def test_defaults_are_filled_from_the_schema(tmp_path):
    config = load_config(write(tmp_path, MINIMAL))
    assert config.pipeline_root == "runs"
    assert config.trainer["epochs"] == 3
    assert config.trainer["optimizer"]["name"] == "adam"
    assert config.trainer["optimizer"]["learning_rate"] == 0.001
    assert "split" not in config.data  # Its default is the dataset's: a test share where the source has none.
    assert get_dataset("mnist").default_split == {"train": 9, "eval": 1}
    assert get_dataset("csv").default_split == {"train": 8, "eval": 1, "test": 1}
    assert config.data["source"] == {"path": None, "format": "auto", "max_records": None}
    assert config.beam_args == []


def test_overrides_set_nested_fields_with_yaml_values(tmp_path):
    config = load_config(
        write(tmp_path, MINIMAL),
        ["trainer.epochs=7", "trainer.optimizer.learning_rate=0.01", "beam.options.direct_num_workers=2"],
    )
    assert config.trainer["epochs"] == 7
    assert config.trainer["optimizer"]["learning_rate"] == 0.01
    assert config.beam_args == ["--direct_num_workers=2"]


@pytest.mark.parametrize(
    "override, message",
    [
        ("trainer.epochs=0", "trainer.epochs: must be ≥ 1 (got 0)"),
        ("trainer.epochs=three", 'trainer.epochs: must be an integer (got "three")'),
        ("trainer.wings=2", "trainer.wings: unknown field (allowed: batch_size,"),
        ("colour=blue", "colour: unknown field"),
        ("data.split.train=0", "data.split.train: must be ≥ 1"),
        ("evaluator.thresholds.accuracy.at_least=0.9", "evaluator.thresholds.accuracy.at_least: unknown field"),
        ("name=Not A Name", "name: must match"),
        ("trainer.early_stopping_monitor=accuracy", "trainer.early_stopping_monitor: must match"),
    ],
)
def test_errors_name_the_offending_field(tmp_path, override, message):
    with pytest.raises(ConfigError) as caught:
        load_config(write(tmp_path, MINIMAL), [override])
    assert any(problem.startswith(message) for problem in caught.value.problems), caught.value.problems


def test_a_missing_required_field_is_named(tmp_path):
    with pytest.raises(ConfigError) as caught:
        load_config(write(tmp_path, {"name": "x", "data": {}}))
    assert caught.value.problems == ["data.dataset: is required"]


def test_every_problem_is_reported_at_once(tmp_path):
    with pytest.raises(ConfigError) as caught:
        load_config(write(tmp_path, MINIMAL), ["trainer.epochs=0", "trainer.batch_size=-1"])
    assert len(caught.value.problems) == 2


@pytest.mark.parametrize("bad", ["trainer.epochs", "=5", "trainer..epochs=5"])
def test_malformed_overrides_are_rejected(bad):
    with pytest.raises(ConfigError, match="expected FIELD.PATH=VALUE"):
        apply_override({}, bad)


def test_an_override_through_a_scalar_is_rejected():
    with pytest.raises(ConfigError, match="trainer is not a mapping"):
        apply_override({"trainer": 3}, "trainer.epochs=5")


def test_unreadable_files_give_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="no such config file"):
        load_config(tmp_path / "missing.yaml")
    (tmp_path / "broken.yaml").write_text("name: [unclosed")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(tmp_path / "broken.yaml")
    (tmp_path / "list.yaml").write_text("- a\n- b\n")
    with pytest.raises(ConfigError, match="must be a mapping"):
        load_config(tmp_path / "list.yaml")


def test_yaml_aliases_are_refused_before_they_expand(tmp_path, run_kflow):
    """Nine aliases nine deep would be ~2.8 GB once expanded (a "billion laughs"); a self-reference loops."""
    lines = ["name: demo", 'l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"l{depth}: &l{depth} [{', '.join([f'*l{depth - 1}'] * 9)}]" for depth in range(1, 10)]
    (tmp_path / "bomb.yaml").write_text("\n".join(lines) + "\n")
    started = time.perf_counter()
    done = run_kflow("validate", tmp_path / "bomb.yaml")
    assert done.returncode == 2 and time.perf_counter() - started < 10  # The interpreter's start included.
    assert done.stderr.strip().splitlines() == [
        f"kflow: {tmp_path / 'bomb.yaml'}: not valid YAML: line 3, column 10: "
        "the alias *l0 is not allowed in a kflow config: write the value out"
    ]
    (tmp_path / "self.yaml").write_text("name: demo\nloop: &s [*s]\n")
    with pytest.raises(ConfigError, match="the alias \\*s is not allowed"):
        load_config(tmp_path / "self.yaml")
    started = time.perf_counter()
    with pytest.raises(ConfigError, match="alias"):
        load_config(tmp_path / "bomb.yaml")
    assert time.perf_counter() - started < 1.0


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ([], ["--runner=FnApiRunner"]),
        (["--runner=DirectRunner", "--direct_num_workers=2"], ["--runner=FnApiRunner", "--direct_num_workers=2"]),
        (["--runner", "DirectRunner", "--x=1"], ["--runner=FnApiRunner", "--x=1"]),
        (["--runner=PrismRunner"], ["--runner=PrismRunner"]),
        (["--runner=DataflowRunner", "--project=p"], ["--runner=DataflowRunner", "--project=p"]),
    ],
)
def test_local_pipelines_run_on_the_fn_api_runner_without_trying_prism(given, expected):
    assert named_runner(given) == expected


def test_a_local_beam_pipeline_leaves_nothing_in_the_temp_folder(tmp_path, monkeypatch):
    import tempfile

    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with beam.Pipeline(options=PipelineOptions(named_runner([]))) as pipeline:
        _ = pipeline | beam.Create([1, 2, 3]) | beam.Map(lambda x: x * 2)
    # The DirectRunner's try of Prism (a download, offline a failure) left an empty beam-temp* folder per pipeline.
    assert list(tmp_path.iterdir()) == []


def test_a_renamed_field_is_read_under_its_former_name_with_a_warning(tmp_path, caplog):
    iris = {"name": "iris", "data": {"dataset": "csv", "label": "species", "task": "regression"}}
    config = load_config(write(tmp_path, iris))
    assert config.data["problem_type"] == "regression" and "task" not in config.data
    assert "data.task is now called data.problem_type" in caplog.text
    assert load_config(write(tmp_path, iris), ["data.task=classification"]).data["problem_type"] == "classification"
    with pytest.raises(ConfigError, match="data.task: is the former name of data.problem_type; keep data.problem_type"):
        load_config(write(tmp_path, iris), ["data.problem_type=classification"])
