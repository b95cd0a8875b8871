"""The MnistIngest spec: its parameter contract with the pipeline builder, and a light import."""

import subprocess
import sys

import pytest

from kflow.components.datasets.mnist.ingest import MnistIngest
from kflow.pipeline.dsl.artifacts import Examples, Rejects, Schema
from kflow.pipeline.dsl.component import load_executor
from tests.conftest import REPO


def test_spec_outputs_parameters_and_executor():
    spec = MnistIngest.spec
    assert spec.inputs == {}
    assert spec.outputs == {"examples": Examples, "schema": Schema, "rejects": Rejects}
    assert list(spec.parameters) == [
        "source_path",
        "source_format",
        "split",
        "max_records",
        "shards_per_split",
        "max_invalid_fraction",
        "beam_args",
    ]
    node = MnistIngest("ingest")
    assert node.parameters == {
        "source_path": None,
        "source_format": "auto",
        "split": {"train": 9, "eval": 1},
        "shards_per_split": 0,  # automatic: one shard per 256 MB of a split
        "max_records": None,
        "max_invalid_fraction": 0.01,
        "beam_args": [],
    }
    assert "beam_args" not in MnistIngest("ingest", parameters={"beam_args": ["--x"]}).cache_parameters
    assert callable(load_executor(spec.executor))


def test_parameter_types_are_checked():
    with pytest.raises(TypeError, match="shards_per_split"):
        MnistIngest("ingest", parameters={"shards_per_split": "2"})


def test_importing_the_component_imports_neither_tensorflow_nor_beam():
    code = (
        "import sys; import kflow.components.datasets.mnist.ingest; "
        "print(sorted(m for m in ('tensorflow', 'apache_beam') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert result.stdout.strip() == "[]"
