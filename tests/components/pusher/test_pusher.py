"""The Pusher: versioned serving folders, nothing pushed for an unblessed model, races between pushers."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from kflow.components.pusher import Pusher
from kflow.components.pusher.executor import run
from kflow.pipeline.dsl.artifacts import Model, ModelBlessing, PushedModel


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> list[Model]:
    """Model artifacts each holding a real (tiny) SavedModel in Format-Serving/, of another factor (2, 3, 4, 5)."""
    import tensorflow as tf

    class Scale(tf.Module):
        def __init__(self, factor: float):
            super().__init__()
            self.factor = tf.Variable(factor)

        @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
        def __call__(self, x):
            return self.factor * x

    made = []
    for factor in (2.0, 3.0, 4.0, 5.0):
        model = Model(tmp_path_factory.mktemp("model"))
        tf.saved_model.save(Scale(factor), str(model.serving_uri))
        made.append(model)
    return made


@pytest.fixture(scope="module")
def model(models) -> Model:
    return models[0]


def blessing(tmp_path: Path, blessed: bool) -> ModelBlessing:
    verdict = ModelBlessing(tmp_path / f"blessing-{blessed}")
    verdict.set_blessed(blessed, [])
    return verdict


def push(model: Model, tmp_path: Path, **kwargs) -> PushedModel:
    out = PushedModel(tmp_path / f"pushed-{len(list(tmp_path.glob('pushed-*')))}")
    out.path.mkdir()
    run(model=model, pushed_model=out, push_destination=str(tmp_path / "serving"), model_name="digits", **kwargs)
    return out


def test_each_push_is_the_next_integer_version_holding_the_saved_model(models, tmp_path):
    first, second = push(models[0], tmp_path), push(models[1], tmp_path, blessing=blessing(tmp_path, True))
    assert (first.record["version"], second.record["version"]) == (1, 2)
    serving = tmp_path / "serving" / "digits"
    assert sorted(p.name for p in serving.iterdir()) == ["1", "2"]
    assert (serving / "2" / "saved_model.pb").read_bytes() == (models[1].serving_uri / "saved_model.pb").read_bytes()
    import tensorflow as tf

    assert tf.saved_model.load(str(serving / "2"))(tf.constant([1.5])).numpy().tolist() == [4.5]


def test_the_served_model_pushed_again_is_no_new_version_and_an_older_one_is_said(models, tmp_path, caplog):
    """A user trial: the Evaluator re-run (a threshold edited, the Trainer cached) pushed the same model again as
    a new version, and an older run's over a newer model: TF Serving then served the older model as the newest."""
    push(models[0], tmp_path)
    again = push(models[0], tmp_path)
    assert again.record["version"] == 1 and again.record["reason"].startswith("already version 1 of")
    assert sorted(p.name for p in (tmp_path / "serving" / "digits").iterdir()) == ["1"]
    push(models[1], tmp_path)
    with caplog.at_level("WARNING", logger="kflow"):
        older = push(models[0], tmp_path)
    assert older.record["version"] == 3
    assert "version 3 is the model of version 1 again, now served over version 2" in caplog.text


def test_an_unblessed_model_is_not_pushed_and_the_record_says_why(model, tmp_path):
    pushed = push(model, tmp_path, blessing=blessing(tmp_path, False))
    assert pushed.pushed is False
    assert "not blessed" in pushed.record["reason"]
    assert not (tmp_path / "serving").exists()


def test_a_model_without_a_saved_model_fails_clearly(model, tmp_path):
    bare = Model(tmp_path / "bare")
    bare.path.mkdir()
    with pytest.raises(FileNotFoundError, match="has no SavedModel in Format-Serving/"):
        push(bare, tmp_path)


def test_concurrent_pushers_get_distinct_versions(models, tmp_path):
    serving = tmp_path / "serving"
    outcomes: list[BaseException | PushedModel] = []

    def one(index: int) -> None:
        out = PushedModel(tmp_path / f"pushed-{index}")
        out.path.mkdir()
        try:
            run(model=models[index], pushed_model=out, push_destination=str(serving), model_name="digits")
            outcomes.append(out)
        except BaseException as error:  # reported by the assertion below
            outcomes.append(error)

    threads = [threading.Thread(target=one, args=(index,)) for index in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(isinstance(outcome, PushedModel) for outcome in outcomes), outcomes
    assert sorted(outcome.record["version"] for outcome in outcomes) == [1, 2, 3, 4]
    assert sorted(p.name for p in (serving / "digits").iterdir()) == ["1", "2", "3", "4"]


def test_the_spec_makes_the_blessing_optional_and_the_destination_a_path():
    assert Pusher.spec.optional_inputs == {"blessing"}
    assert Pusher.spec.parameters["push_destination"].is_path


def test_a_uri_destination_is_written_through_tensorflows_file_system(model, tmp_path):
    """Any URI tf.io.gfile writes (gs://, s3:// with its plugin): here TensorFlow's in-memory file system, ram://,
    and file://; the SavedModel loads back from the pushed version."""
    import tensorflow as tf

    for base in ("ram://pushed", f"file://{tmp_path}/bucket"):
        for expected in (1, 2):
            out = PushedModel(tmp_path / f"pushed-{base[:3]}-{expected}")
            out.path.mkdir()
            done = run(model=model, pushed_model=out, push_destination=base + "/", model_name="digits")
            assert done == {"pushed": True, "version": expected, "serving_dir": f"{base}/digits/{expected}"}
        assert tf.io.gfile.exists(f"{base}/digits/2/saved_model.pb")
    loaded = tf.saved_model.load(f"{tmp_path}/bucket/digits/2")
    assert loaded(tf.constant([1.5])).numpy().tolist() == [3.0]


def test_a_uri_whose_file_system_is_missing_fails_in_one_line(model, tmp_path):
    out = PushedModel(tmp_path / "pushed")
    out.path.mkdir()
    with pytest.raises(ValueError, match=r"TensorFlow has no file system for nosuch:// here"):
        run(model=model, pushed_model=out, push_destination="nosuch://bucket/serving", model_name="digits")
