"""`kflow validate` of a config whose trainer.module names what it takes: a model option (set, or searched by the
tuner) that its build_model never reads, and a tuner objective or early-stopping monitor the training does not report
(the task's metrics when the module has no metrics(), else those its metrics() returns), are refused as for kflow's
own models; a module that reads its options otherwise, or whose metrics() validate cannot call, is not
second-guessed. Found by a user trial: each passed validate, and the search trained every trial on a dimension
nothing read, or failed after every trial."""

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


OWN_METRICS = """import keras


@keras.saving.register_keras_serializable(package="my_model")
class Share(keras.metrics.SparseCategoricalAccuracy):
    pass


def build_model(schema, options):
    inputs = {f["name"]: keras.Input(shape=(1,), name=f["input_name"]) for f in options["features"]}
    joined = keras.layers.concatenate(list(inputs.values()))
    return keras.Model(inputs, keras.layers.Dense(len(options["head"]["classes"]), activation="softmax")(joined))


def metrics():
    return [keras.metrics.SparseCategoricalAccuracy(name="acc"), Share(name="share"), keras.metrics.AUC()]
"""


@pytest.mark.parametrize(
    ("setting", "said"),
    [("trainer.early_stopping_monitor=val_accuracy",
      "trainer.early_stopping_monitor: with my_model.py's metrics() the training reports val_loss, val_acc, "
      "val_share, val_auc, not val_accuracy; did you mean val_acc?"),
     (TUNER % ("trainer.batch_size", "val_shares"),
      "tuner.objective.metric: with my_model.py's metrics() the training reports val_loss, val_acc, val_share, "
      "val_auc, not val_shares; did you mean val_share?")],
    ids=["monitor", "objective"],
)  # fmt: skip
def test_a_monitor_or_objective_the_modules_own_metrics_do_not_report_exits_2_naming_the_field(
    tmp_path, capsys, setting, said
):
    """Before, a module with metrics() was not checked: the Trainer refused the monitor after the ingest, and the
    search failed after every trial."""
    code, lines = validate(tmp_path, capsys, OWN_METRICS, setting)
    assert code == 2 and len(lines) == 1 and said in lines[0], lines


def test_the_modules_metrics_are_read_as_the_trainer_names_them_and_leave_no_trace(tmp_path, capsys):
    """AUC() is `auc` in the Trainer (named as in a process of its own), however many were made before; the check
    puts Keras' registered classes and automatic names back, and keeps no module, so the Trainer of `kflow run`
    imports the module afresh."""
    import sys

    import keras

    from kflow.components.datasets.model_adapt import names_now

    keras.metrics.AUC(), keras.metrics.AUC()  # this process' `auc` and `auc_1`
    names, modules = names_now(), set(sys.modules)
    code, lines = validate(tmp_path, capsys, OWN_METRICS, "trainer.early_stopping_monitor=val_auc",
                           TUNER % ("trainer.batch_size", "val_share"))  # fmt: skip
    assert code == 0, lines
    assert names_now() == names and keras.saving.get_registered_object("my_model>Share") is None
    assert not [name for name in set(sys.modules) - modules if name.startswith("kflow_")]


@pytest.mark.parametrize(
    ("change", "said"),
    [("def metrics():", None),  # as it is: valid
     # What the module's own check refuses is said once, by it.
     ("def metrics(classes):", "not 0; kflow calls metrics() and trains with what it returns"),
     ("def metrics(:", "my_model.py line 15: invalid syntax"),
     # What only the Trainer's call shows is its to say, in its words: validate does not guess.
     ("def metrics(classes=3):\n    raise RuntimeError('not yet')\n\n\ndef unused():", None),
     ("UNITS = {}['units']\n\n\ndef metrics():", None)],  # fails as it is imported: the Trainer says it
    ids=["valid", "arguments", "syntax", "raises", "fails_to_import"],
)  # fmt: skip
def test_a_metrics_that_needs_arguments_raises_or_cannot_be_read_keeps_todays_checks(tmp_path, capsys, change, said):
    source = OWN_METRICS.replace("def metrics():", change)
    code, lines = validate(tmp_path, capsys, source, "trainer.early_stopping_monitor=val_acc")
    if said is None:
        assert code == 0, lines
    else:
        assert code == 2 and len(lines) == 1 and said in lines[0], lines


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
