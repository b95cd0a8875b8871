"""A dataset of another package brings a setting of its own: one folder and one entry point. Its settings model is
checked by `kflow validate` (one line naming the field), documented by `kflow schema` and the generated reference,
and received, typed, by its ingest's executor in a real run."""

import json
import os
import textwrap

import pytest
import yaml

from kflow.pipeline.app.config_reference import config_reference

TOY = {
    "toy_sized/__init__.py": '''
        """A toy dataset with a setting of its own: scikit-learn's digits through MNIST's ingest."""
        from kflow.components.datasets.bundle import Dataset

        DATASET = Dataset(
            name="toy_sized",
            ingest="toy_sized.ingest:ToySizedIngest",
            schema="mnist/schema.pbtxt",
            task="kflow.components.datasets.mnist.task:MnistTask",
            metrics="kflow.components.datasets.mnist.metrics:MnistMetrics",
            settings="toy_sized.settings:ToySettings",
        )
    ''',
    "toy_sized/settings.py": '''
        from pydantic import Field

        from kflow.pipeline.dsl.config_model import Section


        class ToySettings(Section):
            """How the toy reads its digits."""

            pixel_scale: float = Field(1.0, gt=0)
            """What each pixel is multiplied by."""
            tag: str = "plain"
            """A name written beside the examples."""
    ''',
    "toy_sized/ingest.py": """
        import dataclasses
        import json

        from kflow.components.datasets.mnist.ingest import executor as mnist
        from kflow.components.datasets.mnist.ingest.component import MnistIngest
        from kflow.pipeline.dsl.component import Parameter


        class ToySizedIngest(MnistIngest):
            spec = dataclasses.replace(
                MnistIngest.spec,
                parameters={**MnistIngest.spec.parameters, "settings": Parameter(dict, optional=True)},
                executor="toy_sized.ingest:run",
            )


        def run(*, settings, **parameters):
            from toy_sized import DATASET

            typed = DATASET.read_settings(settings)
            figures = mnist.run(**parameters)
            received = {"type": type(typed).__name__, **typed.model_dump()}
            (parameters["examples"].path / "received_settings.json").write_text(json.dumps(received))
            return figures
    """,
    "toy_sized-0.1.dist-info/METADATA": "Metadata-Version: 2.1\nName: toy-sized\nVersion: 0.1\n",
    "toy_sized-0.1.dist-info/entry_points.txt": "[kflow.datasets]\ntoy_sized = toy_sized\n",
}


@pytest.fixture
def toy_package(tmp_path):
    site = tmp_path / "site"
    for name, text in TOY.items():
        (site / name).parent.mkdir(parents=True, exist_ok=True)
        (site / name).write_text(textwrap.dedent(text).lstrip())
    return {**os.environ, "PYTHONPATH": str(site)}


def _config(tmp_path, settings, dataset="toy_sized"):
    data = {"dataset": dataset, "source": {"format": "sklearn_digits", "max_records": 200}}
    if settings is not None:
        data["settings"] = settings
    path = tmp_path / "toy.yaml"
    path.write_text(yaml.safe_dump({"name": "toy", "pipeline_root": str(tmp_path / "runs"), "data": data}))
    return path


def test_the_plugin_setting_is_validated_naming_the_field(toy_package, tmp_path, run_kflow):
    good = run_kflow("validate", _config(tmp_path, {"pixel_scale": 0.5}), env=toy_package, timeout=300)
    assert good.returncode == 0, good.stderr

    bad = run_kflow("validate", _config(tmp_path, {"pixel_scale": 0}), env=toy_package, timeout=300)
    assert bad.returncode == 2
    assert "data.settings.pixel_scale: Input should be greater than 0 (got 0)" in bad.stderr
    assert "Traceback" not in bad.stderr

    typo = run_kflow("validate", _config(tmp_path, {"pixel_scal": 2}), env=toy_package, timeout=300)
    assert typo.returncode == 2
    assert "data.settings.pixel_scal: unknown field; did you mean pixel_scale?" in typo.stderr

    # A dataset without a settings model refuses them, in one line.
    plain = run_kflow("validate", _config(tmp_path, {"x": 1}, dataset="mnist"), timeout=300)
    assert plain.returncode == 2 and "data.settings: mnist takes no settings of its own" in plain.stderr


def test_the_plugin_setting_is_in_the_schema_and_the_generated_reference(toy_package, run_kflow):
    schema = json.loads(run_kflow("schema", env=toy_package, timeout=300).stdout)
    settings = schema["properties"]["data"]["properties"]["settings"]
    (toy,) = [option for option in settings["anyOf"] if option.get("type") == "object"]
    assert set(toy["properties"]) == {"pixel_scale", "tag"} and toy["properties"]["pixel_scale"]["default"] == 1.0
    reference = config_reference(schema)
    assert "`data.settings.pixel_scale`" in reference and "What each pixel is multiplied by." in reference


def test_the_executor_receives_the_typed_settings(toy_package, tmp_path, run_kflow):
    path = _config(tmp_path, {"tag": "from-config"})
    result = run_kflow("run", path, "--until", "ingest", env=toy_package, timeout=600)
    assert result.returncode == 0, result.stderr
    (received,) = (tmp_path / "runs" / "toy").glob("*/ingest/examples/received_settings.json")
    # The defaults filled in at load, the config's value kept, the model's own class on the other side.
    assert json.loads(received.read_text()) == {"type": "ToySettings", "pixel_scale": 1.0, "tag": "from-config"}
