"""kflow compile names the node and the field of every path of this machine a pod would be given, in any node."""

import yaml

from tests.conftest import REPO

IRIS = REPO / "pipeline" / "configs" / "data" / "iris.csv"


def test_compile_warns_about_a_local_push_destination_and_a_declared_ingests_source_path(tmp_path, run_kflow):
    config = {
        "name": "iris",
        "data": {"dataset": "csv", "label": "species", "source": {"path": "gs://a-bucket/iris.csv"}},
        "trainer": {"epochs": 1},
        "evaluator": {"baseline": "none"},
        "components": [
            {"id": "read", "type": "csv_ingest", "parameters": {"source_path": str(IRIS), "label": "species"}},
            {"id": "train", "type": "trainer", "inputs": {"examples": "read.examples", "schema": "read.schema"}},
            {"id": "judge", "type": "evaluator",
             "inputs": {"examples": "read.examples", "schema": "read.schema", "model": "train.model",
                        "model_run": "train.model_run"}},
            {"id": "push_local", "type": "pusher", "inputs": {"model": "train.model", "blessing": "judge.blessing"},
             "parameters": {"push_destination": str(tmp_path / "serving")}},
            {"id": "push_bucket", "type": "pusher", "inputs": {"model": "train.model"},
             "parameters": {"push_destination": "gs://a-bucket/serving"}},
            {"id": "push_volume", "type": "pusher", "inputs": {"model": "train.model"},
             "parameters": {"push_destination": "/mnt/kflow-shared/serving"}},
        ],
    }  # fmt: skip
    (tmp_path / "iris.yaml").write_text(yaml.safe_dump(config))
    done = run_kflow("compile", tmp_path / "iris.yaml", "-o", tmp_path / "p.yaml", "--image", "r.example/kflow:1")
    assert done.returncode == 0, done.stderr[-2000:]
    warnings = [line for line in done.stderr.splitlines() if line.startswith("kflow: warning:")]
    tail = "is a path on this machine: the pods will not see it unless it is on the shared volume"
    assert [line.split(" (mounted")[0] for line in warnings] == [
        f"kflow: warning: node read: source_path: {IRIS} {tail}",
        f"kflow: warning: node push_local: push_destination: {tmp_path / 'serving'} {tail}",
    ]


def test_compile_carries_the_files_a_module_imports_in_pipeline_yaml(tmp_path, run_kflow):
    """A trainer.module travels in pipeline.yaml as its source; a helper file it imports did not (compile warned:
    the pods' import failed). The helper beside it (not on PYTHONPATH) now travels too, as the Trainer's
    `module_imports`, and compile warns of no path of the module's."""
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "helpers.py").write_text("UNITS = 8\n")
    (tmp_path / "models" / "model.py").write_text(
        "import keras\nimport numpy\nfrom helpers import UNITS\n\n\ndef build_model(schema, options):\n"
        "    inputs = keras.Input(shape=(len(options['features']),))\n"
        "    return keras.Model(inputs, keras.layers.Dense(UNITS)(inputs))\n"
    )
    config = {
        "name": "iris",
        "data": {"dataset": "csv", "label": "species", "source": {"path": "gs://a-bucket/iris.csv"}},
        "trainer": {"epochs": 1, "module": "models/model.py"},
        "evaluator": {"baseline": "none"},
    }
    (tmp_path / "iris.yaml").write_text(yaml.safe_dump(config))
    done = run_kflow("compile", tmp_path / "iris.yaml", "-o", tmp_path / "p.yaml", "--image", "r.example/kflow:1")
    assert done.returncode == 0, done.stderr[-2000:]
    assert [line for line in done.stderr.splitlines() if "model.py" in line or "helpers" in line] == []
    compiled = yaml.safe_load((tmp_path / "p.yaml").read_text())
    parameters = [task.get("inputs", {}).get("parameters", {}) for task in compiled["root"]["dag"]["tasks"].values()]
    carried = [given["module_imports"]["runtimeValue"]["constant"] for given in parameters if "module_imports" in given]
    assert carried == [{"helpers.py": "UNITS = 8\n"}]
