"""`kflow validate` of a config whose trainer.module names what it takes: a model option (set, or searched by the
tuner) that its build_model never reads, and a tuner objective or early-stopping monitor the training does not report
when the module has no metrics() (it trains with the task's), are refused as for kflow's own models; a module that
reads its options otherwise, or names its own metrics, is not second-guessed. Found by a user trial: each passed
validate, and the search trained every trial on a dimension nothing read, or failed after every trial."""

from __future__ import annotations

import pytest

from kflow.pipeline.cli.main import main
from tests.conftest import REPO

IRIS_CONFIG = REPO / "pipeline" / "configs" / "iris.yaml"
READS_UNITS = """import keras
from keras import metrics  # a module, not a metrics() of this one's


def build_model(schema, options):
    inputs = {f["name"]: keras.Input(shape=(1,), name=f["input_name"]) for f in options["features"]}
    joined = keras.layers.concatenate(list(inputs.values()))
    hidden = keras.layers.Dense(options.get("units", 16), activation="relu")(joined)
    if "dropout" in options:
        hidden = keras.layers.Dropout(options["dropout"])(hidden)
    return keras.Model(inputs, keras.layers.Dense(len(options["head"]["classes"]), activation="softmax")(hidden))
"""
PASSES_THEM_ON = """import keras


def block(x, options):
    return keras.layers.Dense(options.get("units", 16))(x)


def build_model(schema, options):
    inputs = {f["name"]: keras.Input(shape=(1,), name=f["input_name"]) for f in options["features"]}
    hidden = block(keras.layers.concatenate(list(inputs.values())), options)
    return keras.Model(inputs, keras.layers.Dense(len(options["head"]["classes"]), activation="softmax")(hidden))


def metrics():
    return [keras.metrics.SparseCategoricalAccuracy(name="acc")]
"""
TUNER = "tuner={search_space: {%s: {choice: [8, 32]}}, max_trials: 2, objective: {metric: %s}}"


def validate(tmp_path, capsys, source, *settings):
    (tmp_path / "my_model.py").write_text(source)
    overrides = ["trainer.model=null", f"trainer.module={tmp_path / 'my_model.py'}", *settings]
    code = main(["validate", str(IRIS_CONFIG), *(arg for setting in overrides for arg in ("--set", setting))])
    return code, capsys.readouterr().err.strip().splitlines()


@pytest.mark.parametrize(
    ("setting", "said"),
    [("trainer.model_options.unitz=8",
      "trainer.model_options.unitz: my_model.py's build_model never reads options['unitz']; did you mean units? (it "
      "reads: dropout, features, head, units)"),
     (TUNER % ("trainer.model_options.unitz", "val_loss"),
      "tuner.search_space.trainer.model_options.unitz: my_model.py's build_model never reads options['unitz']; did "
      "you mean units?"),
     (TUNER % ("trainer.model_options.units", "val_r2"),
      "tuner.objective.metric: a classification trains with val_loss, val_accuracy, not val_r2"),
     ("trainer.early_stopping_monitor=val_acc",
      "trainer.early_stopping_monitor: a classification trains with val_loss, val_accuracy, not val_acc; did you mean "
      "val_accuracy?")],
    ids=["option", "searched_option", "objective", "monitor"],
)  # fmt: skip
def test_what_a_module_without_metrics_would_not_read_or_report_exits_2_naming_the_field(
    tmp_path, capsys, setting, said
):
    code, lines = validate(tmp_path, capsys, READS_UNITS, setting)
    assert code == 2 and len(lines) == 1 and said in lines[0], lines


def test_options_it_reads_pass_and_a_module_reading_them_otherwise_or_naming_its_metrics_is_not_second_guessed(
    tmp_path, capsys
):
    assert validate(tmp_path, capsys, READS_UNITS, "trainer.model_options={units: 8, dropout: 0.1}")[0] == 0
    assert validate(tmp_path, capsys, READS_UNITS, TUNER % ("trainer.model_options.units", "val_accuracy"))[0] == 0
    code, lines = validate(
        tmp_path,
        capsys,
        PASSES_THEM_ON,
        "trainer.model_options.unitz=8",
        TUNER % ("trainer.model_options.u", "val_acc"),
    )
    assert code == 0, lines


def test_a_module_importing_kerass_metrics_module_trains_with_the_tasks_metrics():
    """`from keras import metrics` gave the module an attribute `metrics`, a Python module, which kflow called as
    metrics() (TypeError: 'module' object is not callable); it is no metrics() of the module's."""
    from kflow.components.datasets.task import Task
    from kflow.components.datasets.user_module import load_module, with_user_module

    class Base(Task):
        def metrics(self):
            return ["accuracy"]

    task_class = with_user_module(Base, load_module(READS_UNITS, "my_model.py"))
    assert task_class.metrics(object.__new__(task_class)) == ["accuracy"]  # the task's; before: a TypeError


def test_an_edit_of_a_file_the_module_imports_changes_the_trainers_cache_key(tmp_path, monkeypatch):
    """A user trial: a module importing its helper (wine_helpers.py, on PYTHONPATH) was cached after the helper was
    edited: only the module's own text was in the cache key, and the run said `train cached` of a stale model."""
    from kflow.pipeline.app.standard_pipeline import build_pipeline
    from kflow.pipeline.dsl.config import load_config

    (tmp_path / "my_helpers.py").write_text("UNITS = 16\n")
    (tmp_path / "my_model.py").write_text("import my_helpers\n" + READS_UNITS)
    monkeypatch.syspath_prepend(str(tmp_path))

    def trainer_key(*settings):
        overrides = ["trainer.model=null", f"trainer.module={tmp_path / 'my_model.py'}", *settings]
        config = load_config(IRIS_CONFIG, overrides)
        (train,) = [node for node in build_pipeline(config).components if node.id == "train"]
        return train.parameters["module_imports"]

    before = trainer_key()
    assert before is not None and trainer_key() == before  # the same files, the same key
    (tmp_path / "my_helpers.py").write_text("UNITS = 2\n")
    assert trainer_key() not in (before, None)


def test_a_per_class_threshold_validates_against_the_labels_classes(capsys):
    """per_class_recall.<class>, the threshold a rare class needs: validate takes one of the sampled labels' classes
    and refuses another, with the nearest."""
    ok = main(
        ["validate", str(IRIS_CONFIG), "--set", "evaluator.thresholds={per_class_recall.virginica: {lower_bound: 0.3}}"]
    )
    assert ok == 0
    capsys.readouterr()
    code = main(
        ["validate", str(IRIS_CONFIG), "--set", "evaluator.thresholds={per_class_recall.virginca: {lower_bound: 0.3}}"]
    )
    err = capsys.readouterr().err
    assert code == 2 and "per_class_recall.virginca: the label has no class 'virginca'; did you mean virginica?" in err
