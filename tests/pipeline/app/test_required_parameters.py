"""A required component parameter that a config leaves unset is one line naming the config field (exit 2), for every
dataset's ingest, never a traceback from Component._bind_parameters."""

from __future__ import annotations

import pytest
import yaml

from kflow.pipeline.dsl.component import Component, ComponentSpec, MissingParameter, Parameter


class Needs(Component):
    spec = ComponentSpec(parameters={"path": Parameter(str, description="Where the data is."), "n": Parameter(int, 3)})


@pytest.mark.parametrize("parameters", [{}, {"path": None}])
def test_an_absent_or_null_required_parameter_is_missing_not_a_wrong_type(parameters):
    with pytest.raises(MissingParameter, match=r"^ingest: parameter 'path' is required \(Where the data is\.\)$") as e:
        Needs("ingest", parameters=parameters)
    assert (e.value.component, e.value.parameter) == ("ingest", "path")
    with pytest.raises(TypeError, match="parameter 'path' must be str"):
        Needs("ingest", parameters={"path": 3})  # A value of the wrong type is still a type error.


@pytest.mark.parametrize(
    ("data", "line"),
    [
        ({"dataset": "tfds"}, "data.tfds: required by the tfds dataset: {name, version"),
        (
            {"dataset": "csv", "label": "y"},
            "data.source.path: required by the csv dataset: A CSV, JSON Lines",
        ),
        ({"dataset": "parquet", "label": "y"}, "data.source.path: required by the parquet dataset"),
        ({"dataset": "tfrecord", "label": "y"}, "data.source.path: required by the tfrecord dataset"),
        ({"dataset": "images", "source": {"path": None}}, "data.source.path: required by the images dataset"),
    ],
)
def test_validate_names_the_config_field_of_a_missing_required_parameter(tmp_path, run_kflow, data, line):
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"name": "x", "pipeline_root": str(tmp_path), "data": data}))

    done = run_kflow("validate", config)

    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    (only,) = done.stderr.strip().splitlines()
    assert only.startswith(f"kflow: {config}: {line}")
