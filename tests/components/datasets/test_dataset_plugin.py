"""A dataset is one folder plus one registry line: a toy dataset in another package, registered by one entry point,
is known to `kflow validate`, `kflow schema`, the declared components and the Python API with no edit to kflow."""

import json
import os
import subprocess
import sys
import textwrap

import pytest
import yaml

TOY = {
    "toy_digits/__init__.py": '''
        """A toy dataset: scikit-learn's 8x8 digits through MNIST's ingest, task and metrics."""
        from kflow.components.datasets.bundle import Dataset

        DATASET = Dataset(
            name="toy_digits",
            ingest="toy_digits.ingest:ToyDigitsIngest",
            schema="mnist/schema.pbtxt",
            task="kflow.components.datasets.mnist.task:MnistTask",
            metrics="kflow.components.datasets.mnist.metrics:MnistMetrics",
        )
    ''',
    "toy_digits/ingest.py": '''
        from kflow.components.datasets.mnist.ingest.component import MnistIngest


        class ToyDigitsIngest(MnistIngest):
            """MNIST's ingest under the toy's name."""
    ''',
    "toy_digits-0.1.dist-info/METADATA": "Metadata-Version: 2.1\nName: toy-digits\nVersion: 0.1\n",
    "toy_digits-0.1.dist-info/entry_points.txt": "[kflow.datasets]\ntoy_digits = toy_digits\n",
}


@pytest.fixture
def toy_package(tmp_path):
    site = tmp_path / "site"
    for name, text in TOY.items():
        (site / name).parent.mkdir(parents=True, exist_ok=True)
        (site / name).write_text(textwrap.dedent(text).lstrip())
    return {**os.environ, "PYTHONPATH": str(site)}


def config(tmp_path, dataset):
    path = tmp_path / f"{dataset}.yaml"
    data = {"dataset": dataset, "source": {"format": "sklearn_digits", "max_records": 300}}
    path.write_text(yaml.safe_dump({"name": "toy", "pipeline_root": str(tmp_path / "runs"), "data": data}))
    return path


def test_a_registered_toy_dataset_is_known_everywhere(toy_package, tmp_path, run_kflow):
    validated = run_kflow("validate", config(tmp_path, "toy_digits"), env=toy_package, timeout=300)
    assert validated.returncode == 0, validated.stderr

    typo = run_kflow("validate", config(tmp_path, "toy_digit"), env=toy_package, timeout=300)
    assert typo.returncode == 2
    assert "data.dataset: unknown dataset 'toy_digit'; did you mean toy_digits?" in typo.stderr

    schema = run_kflow("schema", env=toy_package, timeout=300)
    enum = json.loads(schema.stdout)["properties"]["data"]["properties"]["dataset"]["enum"]
    assert enum[-1] == "toy_digits" and "mnist" in enum

    api = subprocess.run(
        [sys.executable, "-c", "from kflow.pipeline import api; print(api.ToyDigitsIngest.spec.outputs['examples'])"],
        capture_output=True, text=True, env=toy_package, timeout=300,
    )  # fmt: skip
    assert api.returncode == 0 and "Examples" in api.stdout, api.stderr

    # Without the package, kflow knows no such dataset: the entry point was the only registration.
    unknown = run_kflow("validate", config(tmp_path, "toy_digits"), timeout=300)
    assert unknown.returncode == 2 and "unknown dataset 'toy_digits'" in unknown.stderr


@pytest.mark.slow
def test_the_toy_dataset_ingests_as_a_declared_component(toy_package, tmp_path, run_kflow):
    path = tmp_path / "declared.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "name": "toy",
                "pipeline_root": str(tmp_path / "runs"),
                "components": [
                    {
                        "id": "digits",
                        "type": "toy_digits_ingest",
                        "parameters": {"source_format": "sklearn_digits", "max_records": 300},
                    }
                ],
            }
        )
    )
    result = run_kflow("run", path, env=toy_package, timeout=600)
    assert result.returncode == 0, result.stderr
    (stats,) = (tmp_path / "runs" / "toy").glob("*/digits/examples/stats.json")
    assert json.loads(stats.read_text())["read"] > 0
