"""Each config that ended in a Python traceback (exit 1) before issue 51 now exits 2 with one line on stderr naming
the field or the file's problem, through every command that loads a config."""

import pytest

from tests.pipeline.cli.hostile_configs import IRIS, kflow_in_process, to_yaml, workdir

DEEP = "{model_options: " + "[" * 400 + "]" * 400 + "}"


@pytest.fixture
def folder(tmp_path):
    return workdir(tmp_path)


def iris_with(folder, **sections_as_yaml):
    """The iris config with some top-level fields written as raw YAML."""
    fields = {name: to_yaml(value) for name, value in IRIS.items()} | sections_as_yaml
    path = folder / "config.yaml"
    path.write_text("".join(f"{name}: {text}\n" for name, text in fields.items()))
    return path


@pytest.mark.parametrize(
    "fields, overrides, line",
    [
        ({"trainer": DEEP}, [], "not valid YAML: line 3, column 88: nested more than 64 levels deep"),
        ({}, ["trainer.epochs=2.0"], "trainer.epochs: must be an integer (got 2.0)"),
        ({}, ["trainer.epochs=1e9"], "trainer.epochs: must be an integer (got 1000000000.0)"),
        ({}, ["trainer.stall_timeout=.nan"], "trainer.stall_timeout: must be a finite number (got .nan)"),
        ({}, ["trainer.optimizer.learning_rate=-.inf"], "trainer.optimizer.learning_rate: must be a finite number"),
        ({"name": "!!binary aGVsbG8="}, [], "not valid YAML: line 1, column 7: the tag !!binary is not allowed"),
        ({"name": "x", "tags": "!!set {a}"}, [], "not valid YAML: line 4, column 7: the tag !!set is not allowed"),
        ({"name": "2024-01-01", "trainer": "{seed: 2024-01-01}"}, [], 'trainer.seed: must be an integer (got "2024'),
    ],
)
@pytest.mark.parametrize("command", ["validate", "plan", "compile"])
def test_a_hostile_config_exits_2_with_one_line(folder, fields, overrides, line, command):
    config = iris_with(folder, **fields)
    extra = ["-o", str(folder / "pipeline.yaml")] if command == "compile" else []
    code, out, err = kflow_in_process(command, str(config), *extra, *[f"--set={o}" for o in overrides])
    assert (code, out) == (2, "") and "Traceback" not in err
    (printed,) = err.splitlines()
    assert printed.startswith(f"kflow: {config}: {line}"), printed


@pytest.mark.parametrize(
    "make, line",
    [
        (lambda path: path.mkdir(), "is a folder, not a config file"),
        (lambda path: path.write_bytes(b"name: caf\xe9\n"), "not UTF-8 text (byte 9: 0xe9)"),
    ],
)
def test_a_folder_or_a_file_not_in_utf8_as_the_config_exits_2_with_one_line(folder, make, line):
    path = folder / "config.yaml"
    make(path)
    assert kflow_in_process("validate", str(path)) == (2, "", f"kflow: {path}: {line}\n")


def test_a_date_name_is_text(folder):
    code, out, err = kflow_in_process("validate", str(iris_with(folder, name="2024-01-01")))
    assert code == 0 and "valid (pipeline '2024-01-01'" in out, err


def test_the_program_itself_exits_2_with_one_line(folder, run_kflow):
    """The real `kflow` process (its stderr filtered, its exit fast): deep nesting, and a NaN that `kflow compile`
    turned into a protobuf crash."""
    deep = run_kflow("validate", iris_with(folder, trainer=DEEP))
    assert deep.returncode == 2 and deep.stderr.count("\n") == 1 and "nested more than 64" in deep.stderr
    nan = run_kflow("compile", iris_with(folder), "--set", "trainer.stall_timeout=.nan", "-o", folder / "p.yaml")
    assert nan.returncode == 2, nan.stderr
    assert nan.stderr.splitlines() == [
        f"kflow: {folder / 'config.yaml'}: trainer.stall_timeout: must be a finite number (got .nan)"
    ]
    assert not (folder / "p.yaml").exists()


@pytest.mark.parametrize("command", ["validate", "plan"])
def test_a_declared_header_of_empty_or_repeated_names_is_one_line_naming_it(folder, command):
    """Found by the generated configs: `data.csv.header: ["", ""]` was refused naming no field."""
    config = iris_with(folder)
    code, out, err = kflow_in_process(command, str(config), '--set=data.csv={header: ["", ""]}')
    assert (code, out) == (2, "") and "Traceback" not in err
    (printed,) = err.splitlines()
    assert printed.endswith("data.csv.header: column names must be non-empty and distinct, got ['', '']"), printed
