"""The container entrypoint: typed artifacts from paths, parameters read by their spec's types."""

import json

import pytest
from google.protobuf import json_format
from kfp.pipeline_spec import pipeline_spec_pb2

from kflow.pipeline.runners.kfp_entrypoint import load_component, main, parse_parameter
from tests.pipeline.toy.components import Add, Produce

PRODUCE = f"{Produce.__module__}:Produce"
ADD = f"{Add.__module__}:Add"


def test_runs_a_component_like_a_node(tmp_path, capsys):
    assert main(["--component", PRODUCE, "--output", f"numbers={tmp_path / 'n'}", "--parameter", "value=7"]) == 0
    assert (tmp_path / "n" / "value.txt").read_text() == "7"
    assert '"value": 7' in capsys.readouterr().out
    code = main(
        [
            "--component",
            ADD,
            *("--input", f"left={tmp_path / 'n'}", "--input", f"right={tmp_path / 'n'}"),
            *("--output", f"total={tmp_path / 't'}", "--parameter", "add=1.0"),
        ]
    )
    assert code == 0
    assert (tmp_path / "t" / "value.txt").read_text() == "15"


@pytest.mark.parametrize(
    ("kind", "text", "value"),
    [
        (int, "20", 20),
        (int, "20.0", 20),
        (float, "0.002", 0.002),
        (str, "a=b", "a=b"),
        (bool, "true", True),
        (dict, '{"train": 9.0, "eval": 1}', {"train": 9, "eval": 1}),
        (list, '["--runner=DirectRunner"]', ["--runner=DirectRunner"]),
    ],
)
def test_parameters_are_read_by_their_declared_type(kind, text, value):
    parsed = parse_parameter("p", kind, text)
    assert parsed == value and type(parsed) is type(value)


@pytest.mark.parametrize(("kind", "text"), [(int, "2.5"), (int, "x"), (bool, "yes"), (dict, "{oops")])
def test_unreadable_parameters_name_the_parameter(kind, text):
    with pytest.raises(ValueError, match="parameter 'p'"):
        parse_parameter("p", kind, text)


def test_bad_arguments_exit_2_or_raise_naming_the_problem(tmp_path, capsys):
    assert main(["--component", "tests.pipeline.toy.components.Produce"]) == 2
    assert "package.module:Class" in capsys.readouterr().err
    assert main(["--component", PRODUCE, "--output", "numbers"]) == 2
    with pytest.raises(ValueError, match="unknown parameters"):
        main(["--component", PRODUCE, "--output", f"numbers={tmp_path}", "--parameter", "nope=1"])
    with pytest.raises(ValueError, match="outputs"):
        main(["--component", PRODUCE, "--output", f"wrong={tmp_path}"])
    with pytest.raises(ValueError, match="not a kflow Component"):
        load_component("kflow.pipeline.dsl.artifacts:Examples")


def test_the_working_dir_option_reaches_an_executor_that_takes_one(tmp_path):
    from kflow.components.trainer import Trainer
    from tests.components.fixtures import write_examples, write_schema

    examples, schema = write_examples(tmp_path / "examples"), write_schema(tmp_path / "schema")
    code = main([
        "--component", f"{Trainer.__module__}:Trainer",
        "--input", f"examples={examples.uri}", "--input", f"schema={schema.uri}",
        "--output", f"model={tmp_path / 'model'}", "--output", f"model_run={tmp_path / 'model_run'}",
        "--parameter", "dataset=mnist", "--parameter", "epochs=1", "--parameter", "batch_size=64",
        "--working-dir", str(tmp_path / "work"),
    ])  # fmt: skip
    assert code == 0
    # model.fit's BackupAndRestore kept its state there: a retried task resumes from it.
    assert (tmp_path / "work" / "backup" / "latest.weights.h5").exists()


def test_fingerprint_sources_writes_the_digest_of_the_bytes_and_runs_no_executor(tmp_path):
    from kflow.components.datasets.csv.ingest.component import CsvIngest

    source = tmp_path / "data.csv"
    source.write_text("x,label\n1,a\n2,b\n")
    component = f"{CsvIngest.__module__}:CsvIngest"

    def digest() -> str:
        out = tmp_path / "digest"
        args = ["--component", component, "--parameter", f"source_path={source}", "--parameter", "label=label"]
        assert main([*args, "--fingerprint-sources", str(out)]) == 0
        return out.read_text()

    first = digest()
    assert len(first) == 64 and digest() == first
    source.write_text("x,label\n1,a\n3,b\n")  # same path, same size, other bytes
    assert digest() != first
    assert not (tmp_path / "examples").exists()


def test_an_image_with_other_kflow_code_says_so(tmp_path, caplog):
    args = ["--component", PRODUCE, "--output", f"numbers={tmp_path / 'n'}", "--code-version", "0123456789abcdef"]
    assert main(args) == 0
    assert "compiled with kflow code 0123456789abcdef, this image runs" in caplog.text
    caplog.clear()
    assert main([*args[:-1], Produce.code_version()]) == 0
    assert "compiled with kflow code" not in caplog.text


def test_given_the_executor_input_every_task_writes_its_executor_output_as_kfp_reads_it(tmp_path):
    """KFP takes a task's output artifacts only from its executor output: a task with no metrics writes one too,
    naming each output by the URI the executor input gave; no output file named, none written."""
    output_file = tmp_path / "kfp" / "outputs" / "output_metadata.json"
    uri = "minio://bucket/run/produce/numbers"
    numbers = {"name": "numbers", "type": {"schemaTitle": "system.Artifact"}, "uri": uri}
    executor_input = {"outputs": {"artifacts": {"numbers": {"artifacts": [numbers]}}, "outputFile": str(output_file)}}
    args = ["--component", PRODUCE, "--output", f"numbers={tmp_path / 'n'}", "--parameter", "value=7"]
    assert main([*args, "--executor-input", json.dumps(executor_input)]) == 0
    message = json_format.Parse(output_file.read_text(), pipeline_spec_pb2.ExecutorOutput())
    (artifact,) = message.artifacts["numbers"].artifacts
    assert (artifact.name, artifact.uri) == ("numbers", uri)
    del executor_input["outputs"]["outputFile"]
    output_file.unlink()
    assert main([*args, "--executor-input", json.dumps(executor_input)]) == 0
    assert not output_file.exists()
