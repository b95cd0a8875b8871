import time
from pathlib import Path

import pytest
import yaml

from kflow.components.datasets import get_dataset
from kflow.pipeline.dsl.beam_options import named_runner
from kflow.pipeline.dsl.config import ConfigError, apply_override, config_schema, load_config, validate_config

CONFIGS = Path(__file__).resolve().parents[3] / "pipeline" / "configs"


def write(tmp_path, data):
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


MINIMAL = {"name": "mnist", "data": {"dataset": "mnist"}}
SPAN_FORMS = "a selection of spans: latest | all | {last: N} | {from: A, to: B}"


@pytest.mark.parametrize("name", ["demo.yaml", "mnist.yaml"])
def test_shipped_configs_are_valid(name):
    config = load_config(CONFIGS / name)
    assert config.data.dataset == "mnist"


def test_defaults_are_filled_from_the_schema(tmp_path):
    config = load_config(write(tmp_path, MINIMAL))
    assert config.pipeline_root == "runs"
    assert config.trainer.epochs == 3
    assert config.trainer.optimizer.name == "adam"
    assert config.trainer.optimizer.learning_rate == 0.001
    assert "split" not in config.data  # Its default is the dataset's: a test share where the source has none.
    assert get_dataset("mnist").default_split == {"train": 9, "eval": 1}
    assert get_dataset("csv").default_split == {"train": 8, "eval": 1, "test": 1}
    assert config.data.source.model_dump() == {"path": None, "format": "auto", "max_records": None}
    assert config.beam_args == []


def test_overrides_set_nested_fields_with_yaml_values(tmp_path):
    config = load_config(
        write(tmp_path, MINIMAL),
        ["trainer.epochs=7", "trainer.optimizer.learning_rate=0.01", "beam.options.direct_num_workers=2"],
    )
    assert config.trainer.epochs == 7
    assert config.trainer.optimizer.learning_rate == 0.01
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
        # a fuzzed config's 32,834,305,451 shards once passed validate, and the ingest filled 12 GB writing them
        ("data.shards_per_split=32834305451", "data.shards_per_split: must be an integer from 1 to 10000 or auto (got"),
        ("data.shards_per_split=many", "data.shards_per_split: must be an integer from 1 to 10000 or auto (got"),
        # A value of one of a field's forms: that form's problem, not "is not valid under any of the given schemas".
        ("data.spans={last: 0}", "data.spans.last: must be ≥ 1 (got 0)"),
        ("data.spans={from: -1}", "data.spans.from: must be ≥ 0 (got -1)"),
        ("data.image.size=[0, 8]", "data.image.size.0: must be ≥ 1 (got 0)"),
        # A value of none of them: the forms (a user trial read 'is not valid under any of the given schemas').
        ("data.spans=latest_two", f"data.spans: 'latest_two' is not {SPAN_FORMS}"),
        ("data.spans={first: 2}", f"data.spans: {{first: 2}} is not {SPAN_FORMS}"),  # not the defaults filled in
        ("data.spans=3", f"data.spans: 3 is not {SPAN_FORMS}"),
    ],
)
def test_errors_name_the_offending_field(tmp_path, override, message):
    with pytest.raises(ConfigError) as caught:
        load_config(write(tmp_path, MINIMAL), [override])
    assert any(problem.startswith(message) for problem in caught.value.problems), caught.value.problems


def test_an_override_of_one_share_keeps_the_dataset_s_default_split_s_others(tmp_path, capsys):
    """`--set data.split.train=5` on a config that leaves data.split out was refused, 'data.split.eval: is required':
    the override made the split {train: 5}, the dataset's default filled in only for a split left out. Now it
    changes that share of the default (scikit-learn's wine as a CSV: {train: 5, eval: 1, test: 1}; mnist, which
    keeps its source's test split: {train: 5, eval: 1}); a split given whole is the split as given, and a share
    out of range is still refused naming it."""
    from sklearn.datasets import load_wine

    from kflow.pipeline.app.config_loading import load_for_command
    from kflow.pipeline.app.sections import ingest_parameters
    from kflow.pipeline.cli.main import main

    load_wine(as_frame=True).frame.to_csv(tmp_path / "wine.csv", index=False)
    wine = {"dataset": "csv", "source": {"path": "wine.csv"}, "label": "target"}
    path = write(tmp_path, {"name": "wine", "data": wine})
    config = load_for_command(path, ["data.split.train=5"])
    assert ingest_parameters(config)["split"] == {"train": 5, "eval": 1, "test": 1}
    assert main(["validate", str(path), "--set", "data.split.train=5"]) == 0, capsys.readouterr().err
    capsys.readouterr()
    assert load_for_command(write(tmp_path, MINIMAL), ["data.split.train=5"]).data.split == {"train": 5, "eval": 1}
    for override, said in [
        ("data.split.train=-1", "data.split.train: must be ≥ 1 (got -1)"),
        ("data.split.train=five", 'data.split.train: must be an integer (got "five")'),
        ("data.split={train: 5}", "data.split.eval: is required"),
    ]:
        assert main(["validate", str(path), "--set", override]) == 2
        assert said in capsys.readouterr().err


def test_validate_says_the_forms_of_data_spans_in_one_line(tmp_path, capsys):
    from kflow.pipeline.cli.main import main

    path = write(tmp_path, {"name": "wages", "data": {"dataset": "csv", "source": {"path": "w-{SPAN}.csv"}}})
    assert main(["validate", str(path), "--set", "data.spans=latest_two"]) == 2
    error = capsys.readouterr().err.strip()
    assert error == f"kflow: {path}: data.spans: 'latest_two' is not {SPAN_FORMS}"


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
    assert config.data.problem_type == "regression" and not hasattr(config.data, "task")
    assert "data.task is now called data.problem_type" in caplog.text
    assert load_config(write(tmp_path, iris), ["data.task=classification"]).data.problem_type == "classification"
    with pytest.raises(ConfigError, match="data.task: is the former name of data.problem_type; keep data.problem_type"):
        load_config(write(tmp_path, iris), ["data.problem_type=classification"])


# Configs that once ended in a traceback (issue 51): each is now a ConfigError whose one line names the field or
# the file's problem.
IRIS = {"name": "iris", "data": {"dataset": "csv", "label": "species"}}


@pytest.mark.parametrize(
    "text, problem",
    [
        ("name: !!binary aGVsbG8=\n", "not valid YAML: line 1, column 7: the tag !!binary is not allowed"),
        ("name: x\nlabels: !!set {a, b}\n", "not valid YAML: line 2, column 9: the tag !!set is not allowed"),
        ("name: !!timestamp 2024-01-01\n", "not valid YAML: line 1, column 7: the tag !!timestamp is not allowed"),
        ("name: !!omap [{a: 1}]\n", "not valid YAML: line 1, column 7: the tag !!omap is not allowed"),
        ("trainer: {epochs: !!int two}\n", "not valid YAML: line 1, column 19: !!int 'two' cannot be read"),
        ("name: x\n? [a, b]\n: c\n", "not valid YAML: line 2, column 3: a key must be text, not a list or a mapping"),
        ('name: "\\ud83d"\n', "not valid YAML: line 1, column 7: a lone surrogate (\\ud800-\\udfff) is not text"),
        ("trainer: {model_options: " + "[" * 400 + "]" * 400 + "}\n", "nested more than 64 levels deep"),
    ],
)
def test_yaml_that_is_not_plain_data_is_one_line_naming_where(tmp_path, text, problem):
    (tmp_path / "config.yaml").write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path / "config.yaml")
    ((line,),) = [caught.value.problems]
    assert problem in line and "\n" not in str(caught.value)


def test_a_date_is_the_text_it_looks_like_and_keys_are_the_text_written(tmp_path):
    """YAML 1.2: `2024-01-01` is text (YAML 1.1 made it a datetime.date, which ended in a TypeError); a key `2020`
    is the column "2020", `"\\ud83d\\ude00"` (as JSON writes 😀) the character."""
    (tmp_path / "config.yaml").write_text(
        'name: 2024-01-01\ndata: {dataset: mnist}\ntrainer: {model_options: {2020: 1, "\\ud83d\\ude00": x}}\n'
    )
    config = load_config(tmp_path / "config.yaml")
    assert config.name == "2024-01-01"
    assert config.trainer.model_options == {"2020": 1, "😀": "x"}


@pytest.mark.parametrize(
    "make, problem",
    [
        (lambda path: path.mkdir(), "is a folder, not a config file"),
        (lambda path: path.write_bytes(b"name: caf\xe9\n"), "not UTF-8 text (byte 9: 0xe9)"),
    ],
)
def test_a_folder_or_a_file_that_is_not_utf8_is_one_line(tmp_path, make, problem):
    make(tmp_path / "config.yaml")
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path / "config.yaml")
    assert caught.value.problems == [problem] and str(caught.value) == f"{tmp_path / 'config.yaml'}: {problem}"


@pytest.mark.parametrize("value", ["2.0", "1e9", "1.5"])
def test_an_integer_field_refuses_a_float_even_a_whole_one(tmp_path, value):
    """JSON Schema counts 2.0 as an integer; the Trainer's parameter does not (a TypeError where it was built)."""
    with pytest.raises(ConfigError) as caught:
        load_config(write(tmp_path, MINIMAL), [f"trainer.epochs={value}"])
    assert caught.value.problems == [f"trainer.epochs: must be an integer (got {float(value)!r})"]


def _numeric_fields(schema, path=()):
    """The dotted path of every number or integer field of the schema (a map's entries under the key `x`)."""
    types = schema.get("type", [])
    if {"number", "integer"} & set([types] if isinstance(types, str) else types):
        yield ".".join(path)
    for name, sub in schema.get("properties", {}).items():
        yield from _numeric_fields(sub, (*path, name))
    if isinstance(schema.get("additionalProperties"), dict):
        yield from _numeric_fields(schema["additionalProperties"], (*path, "x"))


NUMERIC_FIELDS = sorted(set(_numeric_fields(config_schema())))


def test_the_schema_has_numeric_fields_to_check():
    assert {"trainer.epochs", "trainer.stall_timeout", "trainer.optimizer.learning_rate"} <= set(NUMERIC_FIELDS)
    assert len(NUMERIC_FIELDS) > 30


@pytest.mark.parametrize("value", [".nan", ".inf", "-.inf", "1e999"])
def test_no_numeric_field_takes_a_nan_or_an_infinity(tmp_path, value):
    """Refused where the config is read, for every field at once: `trainer.stall_timeout=.nan` used to validate,
    then crash `kflow compile` in protobuf (and a NaN watchdog never fires)."""
    shown = {".nan": ".nan", ".inf": ".inf", "-.inf": "-.inf", "1e999": ".inf"}[value]
    path = write(tmp_path, MINIMAL)
    for field in NUMERIC_FIELDS:
        with pytest.raises(ConfigError) as caught:
            load_config(path, [f"{field}={value}"])
        assert caught.value.problems == [f"{field}: must be a finite number (got {shown})"], field


def test_a_config_built_in_python_is_checked_as_plain_data_too():
    """validate_config is also the API's (and the compiler's) door: not only what a YAML file can hold."""
    import datetime

    with pytest.raises(ConfigError) as caught:
        validate_config({**IRIS, "trainer": {"epochs": float("nan"), 3: 1, "seed": datetime.date(2024, 1, 1)}})
    assert caught.value.problems == [
        "trainer.epochs: must be a finite number (got .nan)",
        "trainer.seed: must be text, a number, true or false, a list or a mapping (got a date)",
        "trainer: a key must be text without NUL characters (got 3)",
    ]
    deep: dict = {}
    for _ in range(5000):  # deeper than the interpreter's recursion limit
        deep = {"a": deep}
    with pytest.raises(ConfigError, match="nested more than 64 levels deep"):
        validate_config({**IRIS, "trainer": {"model_options": deep}})


def test_a_problem_quoting_control_characters_is_printed_escaped(tmp_path):
    with pytest.raises(ConfigError) as caught:
        load_config(write(tmp_path, MINIMAL), ["trainer.epochs=\x1b[2J\nboom"])
    assert str(caught.value).endswith('trainer.epochs: must be an integer (got "\\u001b[2J\\nboom")')
