"""The trainer executor, called directly on a small learnable Examples artifact."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest
import tensorflow as tf

from kflow.components.trainer.executor import run
from kflow.pipeline.dsl.artifacts import Model, ModelRun
from tests.components.fixtures import make_arrays, read_split, write_examples, write_schema

EPOCHS = 3


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    root = tmp_path_factory.mktemp("trainer-inputs")
    return write_examples(root / "examples"), write_schema(root / "schema")


@pytest.fixture(scope="module")
def trained(inputs, tmp_path_factory):
    """One training run shared by the tests that only read its outputs."""
    examples, schema = inputs
    root = tmp_path_factory.mktemp("trainer-outputs")
    model, model_run = Model(root / "model"), ModelRun(root / "model_run")
    summary = run(
        dataset="mnist",
        examples=examples,
        schema=schema,
        model=model,
        model_run=model_run,
        epochs=EPOCHS,
        batch_size=32,
        seed=7,
    )
    return model, model_run, summary


def test_training_learns_the_classes(trained):
    _, model_run, summary = trained
    losses = [epoch["loss"] for epoch in model_run.history["per_epoch"]]
    assert losses[-1] < losses[0]
    assert summary["epochs"] == EPOCHS
    assert summary["accuracy"] > 0.9
    assert summary["val_accuracy"] > 0.9
    assert summary["loss"] == pytest.approx(losses[-1])


def test_history_records_every_epoch_and_the_throughput(trained):
    _, model_run, summary = trained
    history = model_run.history
    assert history["epochs"] == EPOCHS
    assert [epoch["epoch"] for epoch in history["per_epoch"]] == [1, 2, 3]
    assert {"loss", "accuracy", "val_loss", "val_accuracy", "seconds", "examples_per_second"} <= set(
        history["per_epoch"][0]
    )
    assert history["train_examples"] == 400 and history["dataset"] == "mnist" and "task" not in history
    assert history["eval_examples"] == 100
    assert history["examples_trained"] == 400 * EPOCHS
    assert history["train_seconds"] > 0
    assert history["examples_per_second"] > 0
    assert summary["examples_per_second"] == history["examples_per_second"]


def test_tensorboard_event_files_are_written(trained):
    _, model_run, _ = trained
    for run_name in ("train", "validation"):
        assert list((model_run.log_dir / run_name).glob("events.out.tfevents.*")), run_name


def test_serving_savedmodel_predicts_like_the_keras_model(trained):
    model, _, _ = trained
    keras_model = keras.models.load_model(model.keras_file)
    images, _ = make_arrays(16, seed=99)
    expected = keras_model.predict_on_batch(images)

    serving = tf.saved_model.load(str(model.serving_uri)).signatures["serving_default"]
    outputs = serving(tf.constant(images, dtype=tf.uint8))
    # TF Serving's classification signature: the scores, and each row's class names (also in assets/classes.txt).
    assert set(outputs) == {"scores", "classes"}
    np.testing.assert_allclose(outputs["scores"].numpy(), expected, rtol=1e-5, atol=1e-6)
    names = [str(digit).encode() for digit in range(10)]
    assert outputs["classes"].numpy().tolist() == [names] * len(images)
    assert (model.serving_uri / "assets" / "classes.txt").read_text().split() == [str(d) for d in range(10)]
    assert keras_model.input_shape == (None, 28, 28)


def test_a_launching_trainer_starts_its_cluster_without_loading_tensorflow(inputs, tmp_path):
    """The launched processes load the task and TensorFlow themselves, as a cluster job's pods do, so their
    start-up does not wait for the launcher's (a cold demo run under MWMS spent 8 s importing before it); the
    launcher loads TensorFlow once they are started, for the export and evaluation that follow."""
    examples, schema = inputs
    script = textwrap.dedent(f"""
        import sys
        from kflow.components.trainer import executor
        from kflow.pipeline.dsl.artifacts import Examples, Model, ModelRun, Schema

        def launch(spec, **cluster):
            print("tensorflow" in sys.modules, "keras" in sys.modules, spec["choice"]["model_name"], cluster["workers"])
            cluster["on_start"]({{}})
            print("tensorflow" in sys.modules, "keras" in sys.modules)
            raise SystemExit(0)

        executor.launch = launch
        executor.run(
            dataset="mnist", examples=Examples({str(examples.uri)!r}), schema=Schema({str(schema.uri)!r}),
            model=Model({str(tmp_path / "model")!r}), model_run=ModelRun({str(tmp_path / "run")!r}),
            strategy="multi_worker_mirrored", workers=3,
        )
    """)  # fmt: skip
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    # The task's model is resolved by the cluster; TensorFlow is loaded once the cluster is started.
    assert result.stdout.split() == ["False", "False", "None", "3", "True", "True"]


def test_mirrored_strategy_with_steps_per_epoch_and_early_stopping(inputs, tmp_path):
    examples, schema = inputs
    model_run = ModelRun(tmp_path / "model_run")
    summary = run(
        dataset="mnist", examples=examples, schema=schema, model=Model(tmp_path / "model"), model_run=model_run,
        strategy="mirrored", epochs=2, batch_size=32, steps_per_epoch=4, optimizer="sgd", learning_rate=0.01,
        early_stopping_patience=1,
    )  # fmt: skip
    history = model_run.history
    assert history["replicas"] >= 1
    assert history["examples_trained"] == 4 * 32 * summary["epochs"]
    assert (tmp_path / "model" / "model.keras").is_file()


def test_several_steps_per_execution_train_whole_calls_and_validate_each_example_once(inputs, tmp_path):
    examples, schema = inputs
    model, model_run = Model(tmp_path / "model"), ModelRun(tmp_path / "model_run")
    run(dataset="mnist", examples=examples, schema=schema, model=model, model_run=model_run, epochs=2,
        batch_size=32, steps_per_execution=3, seed=7)  # fmt: skip
    history = model_run.history
    # 400 examples are 13 batches of 32: an epoch is rounded up to 5 calls of 3 steps; the 4 eval batches take 2.
    assert history["steps_per_epoch"] == 15 and history["final_step"] == 30
    assert history["examples_trained"] == 15 * 32 * 2
    # The last validation scored the 100 eval examples once each with the final weights, as a plain evaluation does.
    images, labels = read_split(examples, "eval")
    probabilities = keras.models.load_model(model.keras_file).predict(images, verbose=0)
    loss = float(np.mean(-np.log(probabilities[np.arange(len(labels)), labels])))
    assert history["per_epoch"][-1]["val_loss"] == pytest.approx(loss, rel=1e-4)


@pytest.mark.slow  # ~12 s; make test keeps the one-replica twin (several steps a call, each example validated once).
def test_mirrored_replicas_run_several_steps_per_call_and_validate_each_example_once(inputs, tmp_path):
    """Keras' own functions of several steps a call fail under a MirroredStrategy of 2 replicas
    (keras-team/keras#19246); the Trainer's (fit_steps.py) train whole calls and count the validation's steps."""
    examples, schema = inputs
    script = textwrap.dedent(f"""
        from kflow.components.trainer.executor import run
        from kflow.pipeline.dsl.artifacts import Examples, Model, ModelRun, Schema

        root = {str(tmp_path)!r}
        for steps in (3, 1):
            run(dataset="mnist", examples=Examples({str(examples.uri)!r}), schema=Schema({str(schema.uri)!r}),
                model=Model(f"{{root}}/model-{{steps}}"), model_run=ModelRun(f"{{root}}/run-{{steps}}"),
                strategy="mirrored", devices=2, epochs=2, batch_size=20, steps_per_execution=steps,
                steps_per_epoch=21, seed=7)
    """)  # fmt: skip
    # In a process of its own: TensorFlow's devices can be split only before they are initialised.
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    history = ModelRun(tmp_path / "run-3").history
    assert (history["strategy"], history["replicas"]) == ("mirrored", 2)
    # 7 calls of 3 steps an epoch, each step the optimizer's.
    assert history["steps_per_epoch"] == 21 and history["final_step"] == 42
    losses = [epoch["loss"] for epoch in history["per_epoch"]]
    assert losses[-1] < losses[0]
    # The same steps as one a call, on the same batches: the same weights and history.
    three, one = (keras.models.load_model(Model(tmp_path / f"model-{steps}").keras_file) for steps in (3, 1))
    for ours, theirs in zip(three.get_weights(), one.get_weights(), strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)
    for ours, theirs in zip(history["per_epoch"], ModelRun(tmp_path / "run-1").history["per_epoch"], strict=True):
        assert {k: ours[k] for k in ("loss", "val_loss")} == pytest.approx({k: theirs[k] for k in ("loss", "val_loss")})
    # The last validation (5 batches: a call of 3, then one of 2) scored each of the 100 eval examples once.
    images, labels = read_split(examples, "eval")
    probabilities = three.predict(images, verbose=0)
    loss = float(np.mean(-np.log(probabilities[np.arange(len(labels)), labels])))
    accuracy = float(np.mean(probabilities.argmax(axis=1) == labels))
    assert history["per_epoch"][-1]["val_loss"] == pytest.approx(loss, rel=1e-4)
    assert history["per_epoch"][-1]["val_accuracy"] == pytest.approx(accuracy, abs=1e-6)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"strategy": "jax_data_parallel", "steps_per_execution": 4}, "explicit JAX loop"),
        ({"steps_per_epoch": 6, "steps_per_execution": 4}, "4 does not divide steps_per_epoch"),
        ({"strategy": "parameter_server", "parameter_servers": 0}, "needs parameter_servers ≥ 1"),
        ({"strategy": "multi_worker_mirrored", "workers": 0}, "needs workers ≥ 1"),
        ({"strategy": "multi_worker_mirrored", "max_restarts": -1}, "max_restarts"),
        ({"schedule": "step"}, "schedule 'step'"),
    ],
)
def test_bad_cluster_and_schedule_settings_are_refused(inputs, tmp_path, arguments, message):
    examples, schema = inputs
    with pytest.raises(ValueError, match=message):
        run(examples=examples, schema=schema, model=Model(tmp_path / "m"), model_run=ModelRun(tmp_path / "r"),
            **{"dataset": "mnist", **arguments})  # fmt: skip


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"strategy": "tpu"}, "unknown strategy 'tpu'"),
        ({"optimizer": "rmsprop"}, "unknown optimizer 'rmsprop'"),
        ({"model_name": "resnet"}, "unknown model 'resnet'"),
        ({"epochs": 0}, "epochs must be at least 1"),
    ],
)
def test_bad_parameters_are_refused(inputs, tmp_path, arguments, message):
    examples, schema = inputs
    with pytest.raises(ValueError, match=message):
        run(examples=examples, schema=schema, model=Model(tmp_path / "m"), model_run=ModelRun(tmp_path / "r"),
            **{"dataset": "mnist", **arguments})  # fmt: skip


@pytest.mark.parametrize(
    "trainer",  # the loop's ~7 s, the JAX loop's ~40 s (make test says which tables JAX takes: test_jax_tables.py)
    ["fit", pytest.param("loop", marks=pytest.mark.slow), pytest.param("jax_data_parallel", marks=pytest.mark.slow)],
)
def test_an_early_stop_keeps_the_best_epochs_weights(tmp_path, trainer):
    """Past the best epoch, `patience` more epochs overfit a small real table (scikit-learn's diabetes, 442 rows): the
    model kept is the best epoch's, under model.fit (Keras' restore_best_weights), the custom loop and the explicit
    JAX loop (a table of numbers trains on JAX) alike: the same weights as a training of that many epochs (same seed,
    same batches)."""
    from kflow.components.datasets.tabular.task import TabularTask
    from kflow.components.trainer import loop
    from kflow.components.trainer.config import TrainConfig
    from kflow.components.util.schema import load_schema
    from tests.components.datasets.tabular_fixtures import ingest_diabetes

    examples, schema = ingest_diabetes(tmp_path)
    options = {"hidden_units": [256, 256], "dropout": 0.0}

    def trained(name: str, **settings):
        model, model_run = Model(tmp_path / name / "model"), ModelRun(tmp_path / name / "model_run")
        settings = {"batch_size": 8, "learning_rate": 0.01, "seed": 7, **settings}
        if trainer != "loop":  # model.fit, or the JAX loop in a process of its own
            strategy = {"strategy": trainer} if trainer != "fit" else {}
            run(dataset="csv", examples=examples, schema=schema, model=model, model_run=model_run,
                model_options=options, **settings, **strategy)  # fmt: skip
        else:
            task = TabularTask(load_schema(schema.file), model_options=options)
            task.prepare(examples, model.assets_uri)
            loop.train(task, examples=examples, model=model, model_run=model_run, config=TrainConfig(**settings))
        return keras.models.load_model(model.keras_file).get_weights(), model_run.history

    stopped, history = trained("stopped", epochs=40, early_stopping_patience=3)
    losses = [epoch["val_loss"] for epoch in history["per_epoch"]]
    assert history["stopped_early"], losses  # wide layers and a high learning rate overfit 350 rows quickly
    best = 1 + losses.index(min(losses))
    assert best < len(losses)
    weights, _ = trained("best", epochs=best)
    for kept, expected in zip(stopped, weights, strict=True):
        np.testing.assert_allclose(kept, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.slow  # ~30 s: three JAX trainings; make test trains the JAX loop above, and warm-starts under fit
def test_the_explicit_jax_loop_warm_starts_from_an_earlier_model(tmp_path):
    """trainer.warm_start under jax_data_parallel: the state the loop trains is taken from the model once the earlier
    weights are in it, so its first epoch starts where the earlier model ended, not where a new one starts."""
    from tests.components.datasets.tabular_fixtures import ingest_diabetes

    examples, schema = ingest_diabetes(tmp_path)
    settings = {"dataset": "csv", "strategy": "jax_data_parallel", "examples": examples, "schema": schema,
                "batch_size": 32, "learning_rate": 0.01, "seed": 7}  # fmt: skip
    earlier = Model(tmp_path / "earlier")
    run(model=earlier, model_run=ModelRun(tmp_path / "earlier_run"), epochs=30, **settings)
    warm, scratch = ModelRun(tmp_path / "warm_run"), ModelRun(tmp_path / "scratch_run")
    run(model=Model(tmp_path / "warm"), model_run=warm, epochs=1, warm_start=str(earlier.uri),
        warm_start_model_uri=str(earlier.uri), **settings)  # fmt: skip
    run(model=Model(tmp_path / "scratch"), model_run=scratch, epochs=1, **settings)
    assert warm.history["warm_started_from"] == str(earlier.uri) and scratch.history["warm_started_from"] is None
    trained = ModelRun(tmp_path / "earlier_run").history["per_epoch"]
    first_warm, first_scratch = warm.history["per_epoch"][0]["loss"], scratch.history["per_epoch"][0]["loss"]
    assert first_warm < first_scratch and first_warm < 1.5 * trained[-1]["loss"], (first_warm, first_scratch, trained)


def test_a_patience_of_few_epochs_waits_the_least_steps_too(tmp_path):
    """trainer.early_stopping_min_steps: a small table's epoch is a few steps, and a patience of epochs alone stops it
    on a plateau; the patience is then at least that many steps' worth of epochs (whole ones), past the best."""
    from tests.components.datasets.tabular_fixtures import ingest_diabetes

    examples, schema = ingest_diabetes(tmp_path)
    model_run = ModelRun(tmp_path / "run")
    run(dataset="csv", examples=examples, schema=schema, model=Model(tmp_path / "model"), model_run=model_run,
        model_options={"hidden_units": [256, 256], "dropout": 0.0}, batch_size=8, learning_rate=0.01, seed=7,
        epochs=60, early_stopping_patience=1, early_stopping_min_steps=100)  # fmt: skip
    history = model_run.history
    losses = [epoch["val_loss"] for epoch in history["per_epoch"]]
    waited = -(-100 // history["steps_per_epoch"])  # 100 steps of 44 a epoch: 3 epochs, not 1
    assert waited > 1 and history["stopped_early"], losses
    assert len(losses) == 1 + losses.index(min(losses)) + waited


def test_model_fit_runs_several_steps_a_call_on_an_epoch_of_many_steps(inputs, tmp_path, caplog):
    examples, schema = inputs
    model_run = ModelRun(tmp_path / "model_run")
    with caplog.at_level("INFO", logger="kflow.trainer"):
        run(dataset="mnist", examples=examples, schema=schema, model=Model(tmp_path / "model"), model_run=model_run,
            epochs=1, batch_size=1, seed=7)  # fmt: skip
    # 400 examples a step each: 4 steps a call (at most 3 more a pass: under 1 %), 100 whole calls.
    assert "4 steps a call" in caplog.text
    history = model_run.history
    assert history["steps_per_epoch"] == 400 and history["final_step"] == 400
    assert history["examples_trained"] == 400


def test_a_model_whose_weights_went_nan_is_not_exported(tmp_path):
    """A diverging training on a real table (scikit-learn's diabetes; a learning rate of 1e30) ends with NaN weights:
    refused in one line naming the weight, and no model written for an Evaluator to bless or a Pusher to ship (a
    user trial's NaN weights scored every row alike, were blessed and then served)."""
    from tests.components.datasets.tabular_fixtures import ingest_diabetes

    examples, schema = ingest_diabetes(tmp_path)
    model = Model(tmp_path / "model")
    with pytest.raises(ValueError, match=r"weight \S+ holds \d+ NaN or infinite value\(s\) of \d+") as refused:
        run(dataset="csv", examples=examples, schema=schema, model=model, model_run=ModelRun(tmp_path / "run"),
            epochs=2, batch_size=32, learning_rate=1e30)  # fmt: skip
    assert "\n" not in str(refused.value)
    assert not model.keras_file.exists()
