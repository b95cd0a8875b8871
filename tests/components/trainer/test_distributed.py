"""The custom loop, the local cluster launcher and fault tolerance, on REAL multi-process loopback clusters."""

from __future__ import annotations

import io
import json
import logging
import os
import signal
import threading
import time

import keras
import numpy as np
import pytest
import tensorflow as tf

from kflow.components.datasets.mnist.task import MnistTask
from kflow.components.trainer import fit, launcher, loop
from kflow.components.trainer.config import TrainConfig
from kflow.components.trainer.executor import run
from kflow.components.trainer.optimizers import learning_rate_schedule
from kflow.components.trainer.strategies.cluster_env import is_chief
from kflow.components.trainer.strategies.parameter_server import accumulate, worker_batches
from kflow.components.trainer.training import dataset_factory
from kflow.components.util.schema import load_schema
from kflow.pipeline.dsl.artifacts import Model, ModelRun
from tests.components.fixtures import cluster_spec, write_examples, write_schema

TRAIN_EXAMPLES = 400  # fixtures.write_examples: 400 train, 100 eval


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    root = tmp_path_factory.mktemp("distributed-inputs")
    return write_examples(root / "examples"), write_schema(root / "schema")


def _outputs(root):
    return Model(root / "model"), ModelRun(root / "model_run")


@pytest.mark.distributed
@pytest.mark.slow  # make test trains the same cluster, sidecar evaluator included (test_sidecar_evaluator.py)
def test_multi_worker_mirrored_two_workers_agree_and_learn(inputs, tmp_path):
    examples, schema = inputs
    model, model_run = _outputs(tmp_path)
    summary = run(
        dataset="mnist", examples=examples, schema=schema, model=model, model_run=model_run,
        strategy="multi_worker_mirrored", workers=2, epochs=2, batch_size=32, seed=3, working_dir=tmp_path / "work",
    )  # fmt: skip
    history = model_run.history
    losses = [epoch["loss"] for epoch in history["per_epoch"]]
    assert losses[-1] < losses[0]
    assert history["replicas"] == 2 and history["strategy"] == "multi_worker_mirrored"
    assert summary["final_step"] == 2 * 13  # ceil(400 / 32) steps an epoch
    digests = {json.loads(p.read_text())["weights_sha256"] for p in (model_run.path / "workers").glob("*.json")}
    assert len(list((model_run.path / "workers").glob("worker-*.json"))) == 2
    assert len(digests) == 1, "the two replicas ended with different weights"
    assert model.keras_file.exists() and (model.serving_uri / "saved_model.pb").exists()
    assert list((model_run.log_dir / "train").iterdir())
    assert sorted(p.name for p in (tmp_path / "work" / "checkpoints").glob("*.index")) == [
        "ckpt-13.index",
        "ckpt-26.index",
    ]


@pytest.mark.distributed  # ~13 s: make test's real parameter-server cluster (the others are in make test-all)
def test_parameter_server_two_workers_one_ps_learns(inputs, tmp_path):
    examples, schema = inputs
    model, model_run = _outputs(tmp_path)
    summary = run(
        dataset="mnist", examples=examples, schema=schema, model=model, model_run=model_run,
        strategy="parameter_server", workers=2, parameter_servers=1, epochs=2, batch_size=32, seed=3,
        steps_per_execution=4, working_dir=tmp_path / "work",
    )  # fmt: skip
    history = model_run.history
    losses = [epoch["loss"] for epoch in history["per_epoch"]]
    assert losses[-1] < losses[0]
    assert history["strategy"] == "parameter_server"
    assert summary["final_step"] == 32  # 13 batches an epoch, rounded up to 4 calls of 4 steps
    assert 0.0 <= history["per_epoch"][-1]["val_accuracy"] <= 1.0
    # Train metrics come from atomic increments on the PS (parameter_server.accumulate).
    accuracies = [epoch["accuracy"] for epoch in history["per_epoch"]]
    assert all(0.0 < accuracy <= 1.0 for accuracy in accuracies) and accuracies[-1] > accuracies[0]
    assert model.keras_file.exists()


@pytest.mark.parametrize("trainer", [loop, fit], ids=["custom_loop", "fit"])
def test_a_training_resumes_from_the_last_checkpoint_with_the_epochs_before_it(trainer, inputs, tmp_path, caplog):
    examples, schema = inputs
    model, model_run = _outputs(tmp_path)
    config = TrainConfig(epochs=1, batch_size=50, optimizer="adamw", schedule="cosine", warmup_steps=2)

    def train():
        return trainer.train(
            MnistTask(load_schema(schema.file)), examples=examples, model=model, model_run=model_run, config=config,
            working_dir=tmp_path / "work",
        )  # fmt: skip

    first = train()
    assert (first["start_step"], first["final_step"]) == (0, 8)
    config.epochs = 3
    with caplog.at_level(logging.INFO, logger="kflow.trainer"):
        second = train()
    assert "resumed from step 8" in caplog.text and "train: epochs 2-3 (resumed) in" in caplog.text
    # The epoch reached, as the config counts them (3), and those this run trained (2): it read "2 epochs" of 3.
    assert (second["start_step"], second["final_step"], second["epochs"], second["epochs_this_run"]) == (8, 24, 3, 2)
    # Its history has the epoch before the checkpoint too, as the first run measured it (epoch_journal.py).
    assert [epoch["epoch"] for epoch in second["per_epoch"]] == [1, 2, 3]
    assert second["per_epoch"][0] == first["per_epoch"][0]
    assert model_run.history["final_step"] == 24
    # Run again after its last epoch (a Ctrl-C after the training's end): no epoch trained, the metrics still there.
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="kflow.trainer"):
        third = train()
    assert "no epoch left to train (resumed after epoch 3)" in caplog.text
    assert (third["epochs"], third["epochs_this_run"]) == (3, 0)
    assert third["per_epoch"] == second["per_epoch"]


@pytest.mark.slow  # ~8 s; make test trains several steps a call in test_trainer_executor.py
def test_the_loop_trains_several_steps_per_call_as_it_trains_them_one_by_one(inputs, tmp_path, caplog):
    examples, schema = inputs
    weights, histories = [], []
    # 400 examples are 13 batches of 32: with 3 steps a call an epoch is rounded up to 15 steps (5 calls). Unset, the
    # loop times single steps in the first epoch, then runs several a call, never past a checkpoint or the epoch's end.
    runs = {
        "one": ({"steps_per_epoch": 15, "steps_per_execution": 1}, [28, 30]),
        "three": ({"steps_per_execution": 3}, [24, 30]),
        "chosen": ({"steps_per_epoch": 15}, [28, 30]),
    }
    for name, (settings, kept) in runs.items():
        model, model_run = _outputs(tmp_path / name)
        config = TrainConfig(epochs=2, batch_size=32, seed=5, checkpoint_every_steps=4, **settings)
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="kflow.trainer"):
            summary = loop.train(
                MnistTask(load_schema(schema.file)), examples=examples, model=model, model_run=model_run,
                config=config, working_dir=tmp_path / name / "work",
            )  # fmt: skip
        assert (summary["steps_per_epoch"], summary["final_step"]) == (15, 30)
        weights.append(keras.models.load_model(model.keras_file).get_weights())
        histories.append(model_run.history["per_epoch"])
        # A checkpoint once a call passes a multiple of 4 (3 steps a call: at steps 6, 9, 12, 18, ..., 24, 30) and at
        # each epoch's end; the manager keeps the last 2.
        checkpoints = (tmp_path / name / "work" / "checkpoints").glob("*.index")
        assert sorted(int(p.name.split("-")[1].split(".")[0]) for p in checkpoints) == kept
        chosen = [int(r.getMessage().split()[1]) for r in caplog.records if "step(s) a call" in r.getMessage()]
        assert len(chosen) == (name == "chosen") and all(n > 1 for n in chosen)
    # The same batches in the same order, so the same training: weights and per-epoch losses.
    for other in (1, 2):
        for one, several in zip(weights[0], weights[other], strict=True):
            np.testing.assert_allclose(one, several, rtol=1e-5, atol=1e-6)
        assert [e["loss"] for e in histories[other]] == pytest.approx([e["loss"] for e in histories[0]], rel=1e-5)


@pytest.mark.parametrize(
    ("make_metric", "binary"),
    [
        (keras.metrics.SparseCategoricalAccuracy, False),
        (lambda: keras.metrics.AUC(num_thresholds=20), True),
        (keras.metrics.BinaryAccuracy, True),
    ],
    ids=["sparse_categorical_accuracy", "auc", "binary_accuracy"],
)
def test_accumulated_increments_equal_keras_own_updates(make_metric, binary):
    rng = np.random.default_rng(0)
    accumulated, updated = make_metric(), make_metric()
    for _ in range(3):
        if binary:
            y, scores = rng.integers(0, 2, size=(16, 1)), rng.random((16, 1)).astype("float32")
        else:
            y, scores = rng.integers(0, 4, size=(16,)), rng.random((16, 4)).astype("float32")
        weights = rng.random(16).astype("float32")
        tf.function(lambda a, b, w: accumulate(accumulated, a, b, w))(y, scores, weights)
        updated.update_state(y, scores, weights)
    assert float(accumulated.result()) == pytest.approx(float(updated.result()), rel=1e-6)
    for mine, theirs in zip(accumulated.variables, updated.variables, strict=True):
        np.testing.assert_allclose(np.asarray(mine), np.asarray(theirs), rtol=1e-6)


@pytest.mark.parametrize("batch_size", [32, 400], ids=["13 batches a pass", "1 batch a pass"])
def test_parameter_server_workers_read_disjoint_batches_that_cover_the_split(inputs, batch_size):
    """Every worker's pipeline shuffles with the same seed; each reads its own share of the one batch stream."""
    examples, schema = inputs
    task = MnistTask(load_schema(schema.file))
    make = dataset_factory(task, examples, TrainConfig(batch_size=batch_size, seed=3))

    def images(data, batches):
        return [bytes(image) for x, _ in data.take(batches) for image in np.asarray(x).reshape(len(x), -1)]

    batches_a_pass = -(-TRAIN_EXAMPLES // batch_size)
    stream = images(make("train", True, batch_size).repeat(), 2 * batches_a_pass)  # two passes, as one worker read
    shares = [images(worker_batches(make, batch_size, 2, index), batches_a_pass) for index in (0, 1)]
    assert all(shares)
    assert sorted(shares[0] + shares[1]) == sorted(stream)  # the two workers read the stream's batches once each
    if batches_a_pass > 1:  # in the first pass no image is read twice: each worker takes every other batch
        first_pass = shares[0][: batches_a_pass // 2 * batch_size] + shares[1][: batches_a_pass // 2 * batch_size]
        assert len(set(first_pass)) == len(first_pass)


@pytest.mark.parametrize("batch_size", [32, 128], ids=["4 batches a pass", "1 batch a pass"])
def test_each_synchronous_worker_reads_eval_batches_however_few_the_split_holds(inputs, batch_size):
    """MultiWorkerMirrored's pipelines shard the eval split's batches: a split of one batch (a small table's 15 eval
    rows, a gauntlet's retraining on 70 % of its rows: 5 of 9 tables) left worker 1 none, and its first validation
    ended the run (`OutOfRangeError`). A split of fewer batches than workers is read whole by each."""
    from kflow.components.trainer.strategies.runtime import input_fn

    examples, schema = inputs
    task = MnistTask(load_schema(schema.file))
    make = dataset_factory(task, examples, TrainConfig(batch_size=batch_size, seed=3))
    eval_rows = 100  # fixtures.write_examples

    def first_batch(index: int) -> bytes:
        context = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=index, num_replicas_in_sync=2)
        data = input_fn(make, "eval", False, lambda _: batch_size, eval_rows)(context)
        x, _ = next(iter(data))
        return np.asarray(x).tobytes()

    batches = [first_batch(index) for index in (0, 1)]  # neither pipeline empty
    assert (batches[0] == batches[1]) == (batch_size >= eval_rows)  # one batch: both read it; more: a shard each


def test_learning_rate_schedules_warm_up_then_decay():
    config = TrainConfig(learning_rate=0.1, schedule="polynomial", warmup_steps=10)
    rate = learning_rate_schedule(config, total_steps=110)
    assert float(rate(0)) == pytest.approx(0.01)
    assert float(rate(9)) == pytest.approx(0.1)
    assert float(rate(60)) == pytest.approx(0.05)
    assert float(rate(110)) == pytest.approx(0.0)
    cosine = learning_rate_schedule(TrainConfig(learning_rate=0.1, schedule="cosine"), total_steps=100)
    assert float(cosine(50)) == pytest.approx(0.05, abs=1e-6)
    assert learning_rate_schedule(TrainConfig(learning_rate=0.1), total_steps=100) == 0.1


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [("strategy", "horovod", "unknown strategy"), ("schedule", "step", "schedule"), ("batch_size", 0, "batch_size")],
)
def test_bad_configuration_is_named(field, value, message):
    config = TrainConfig(**{field: value})
    with pytest.raises(ValueError, match=message):
        config.validate()


def test_tf_config_roles_follow_the_training_operator():
    cluster = launcher.cluster_spec("parameter_server", workers=2, parameter_servers=1)
    assert [len(cluster[k]) for k in ("chief", "worker", "ps")] == [1, 2, 1]
    assert len(set(cluster["chief"] + cluster["worker"] + cluster["ps"])) == 4
    assert launcher.cluster_spec("multi_worker_mirrored", workers=3, parameter_servers=0).keys() == {"worker"}
    assert is_chief({"cluster": cluster, "task": {"type": "chief", "index": 0}})
    assert not is_chief({"cluster": cluster, "task": {"type": "worker", "index": 0}})
    assert is_chief({"cluster": {"worker": ["a", "b"]}, "task": {"type": "worker", "index": 0}})
    assert not is_chief({"cluster": {"worker": ["a", "b"]}, "task": {"type": "worker", "index": 1}})
    with pytest.raises(ValueError, match="parameter_servers"):
        launcher.cluster_spec("parameter_server", workers=2, parameter_servers=0)


@pytest.mark.distributed
def test_a_failing_worker_fails_the_launch_and_leaves_no_process(inputs, tmp_path):
    examples, schema = inputs
    spec = cluster_spec(
        tmp_path, examples, schema, TrainConfig(strategy="multi_worker_mirrored"), dataset="no-such-task"
    )
    started = {}
    sink = io.StringIO()
    with pytest.raises(launcher.ClusterError, match="failed with exit code 1"):
        launcher.launch(spec, spec_dir=tmp_path, workers=2, sink=sink, on_start=started.update, timeout=120)
    assert "[worker-0] " in sink.getvalue() and "unknown dataset 'no-such-task'" in sink.getvalue()
    assert set(started) == {"worker-0", "worker-1"}
    assert all(process.poll() is not None for process in started.values())


@pytest.mark.slow
@pytest.mark.distributed
def test_killed_worker_restarts_the_cluster_from_the_last_checkpoint(inputs, tmp_path):
    examples, schema = inputs
    work = tmp_path / "work"
    config = TrainConfig(
        strategy="multi_worker_mirrored", epochs=4, batch_size=32, steps_per_epoch=20, checkpoint_every_steps=5
    )
    spec = cluster_spec(tmp_path, examples, schema, config)

    def kill_worker_after_a_checkpoint(processes):
        def watch():
            deadline = time.monotonic() + 240
            while time.monotonic() < deadline:
                if list((work / "checkpoints").glob("ckpt-*.index")) if (work / "checkpoints").exists() else []:
                    os.kill(processes["worker-1"].pid, signal.SIGKILL)
                    return
                time.sleep(0.05)

        threading.Thread(target=watch, daemon=True).start()

    sink = io.StringIO()
    restarts = launcher.launch(
        spec, spec_dir=work, workers=2, max_restarts=1, sink=sink, on_start=kill_worker_after_a_checkpoint,
        timeout=300,
    )  # fmt: skip
    history = ModelRun(tmp_path / "run").history
    assert restarts == 1
    assert "resumed from step" in sink.getvalue()
    assert history["start_step"] > 0 and history["start_step"] % 5 == 0
    assert history["final_step"] == 80
    assert history["examples_trained"] == (80 - history["start_step"]) * 32


@pytest.mark.slow  # ~30 s; make test keeps the loop (the Quora PS test) and the keras-hub MLM (test_wikitext2.py).
def test_the_loop_trains_a_keras_hub_task_with_dict_inputs_and_sample_weights(tmp_path):
    """WikiText-2 MLM batches are ({token_ids, padding_mask, mask_positions}, labels, weights)."""
    from kflow.components.datasets.wikitext2.task import WikiText2Task
    from tests.components.datasets.test_wikitext2 import OPTIONS, SCHEMA
    from tests.components.datasets.text_fixtures import write_wikitext

    examples = write_wikitext(tmp_path / "examples")
    task = WikiText2Task(SCHEMA, model_options=OPTIONS)
    task.prepare(examples, tmp_path / "assets")
    x, _, weights = next(iter(task.dataset(examples, "train", batch_size=8, training=True, seed=1)))
    assert isinstance(x, dict) and weights is not None
    model, model_run = _outputs(tmp_path)
    config = TrainConfig(epochs=3, batch_size=16, steps_per_epoch=8, optimizer="adamw", learning_rate=3e-3)
    summary = loop.train(task, examples=examples, model=model, model_run=model_run, config=config)
    losses = [epoch["loss"] for epoch in summary["per_epoch"]]
    assert losses[-1] < losses[0]
    assert model.keras_file.exists()


@pytest.mark.real_data
def test_the_loop_learns_real_mnist(tmp_path):
    from kflow.components.datasets.mnist.ingest.executor import run as ingest
    from kflow.pipeline.dsl.artifacts import Examples, Rejects, Schema
    from tests.conftest import shared_dataset

    data = shared_dataset("mnist") / "mnist.npz"
    examples, schema = Examples(tmp_path / "examples"), Schema(tmp_path / "schema")
    ingest(examples=examples, schema=schema, rejects=Rejects(tmp_path / "rejects"), source_path=str(data),
           split={"train": 4, "eval": 1}, max_records=2500)  # fmt: skip
    model, model_run = _outputs(tmp_path)
    config = TrainConfig(epochs=2, batch_size=64, schedule="cosine", warmup_steps=5)
    summary = loop.train(
        MnistTask(load_schema(schema.file)), examples=examples, model=model, model_run=model_run, config=config
    )
    assert summary["train_examples"] + summary["eval_examples"] == 2500
    assert summary["per_epoch"][-1]["val_accuracy"] > 0.8


def test_ctrl_c_stops_every_cluster_process(tmp_path):
    spec = {"dataset": "mnist", "config": TrainConfig(strategy="parameter_server").to_json()}
    started = {}

    def interrupt(processes):
        started.update(processes)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        launcher.launch(spec, spec_dir=tmp_path, workers=2, parameter_servers=1, sink=io.StringIO(), on_start=interrupt)
    assert set(started) == {"ps-0", "worker-0", "worker-1", "chief-0"}
    assert all(process.poll() is not None for process in started.values())


def test_mixed_precision_trains_and_restores_the_global_policy(inputs, tmp_path):
    import keras

    examples, schema = inputs
    model, model_run = _outputs(tmp_path)
    config = TrainConfig(epochs=1, batch_size=50, steps_per_epoch=3, mixed_precision=True)
    summary = loop.train(
        MnistTask(load_schema(schema.file)), examples=examples, model=model, model_run=model_run, config=config
    )
    assert summary["final_step"] == 3
    assert summary["per_epoch"][0]["loss"] > 0
    assert keras.mixed_precision.global_policy().name == "float32"


@pytest.mark.slow  # ~15 s; make test keeps the same stop under fit (test_early_stopping_stops_fit_too)
def test_early_stopping_watches_the_task_monitor(inputs, tmp_path):
    class FallingLossNeverImproves(MnistTask):
        monitor_mode = "max"  # val_loss falls, so in "max" mode only the first epoch is an improvement

    examples, schema = inputs
    model, model_run = _outputs(tmp_path)
    config = TrainConfig(epochs=6, batch_size=50, steps_per_epoch=3, early_stopping_patience=1)
    summary = loop.train(
        FallingLossNeverImproves(load_schema(schema.file)), examples=examples, model=model, model_run=model_run,
        config=config,
    )  # fmt: skip
    assert summary["stopped_early"] is True
    assert summary["epochs"] == 2
    assert summary["per_epoch"][1]["val_loss"] < summary["per_epoch"][0]["val_loss"]


def test_early_stopping_watches_the_configured_metric_which_must_be_the_tasks(inputs, tmp_path):
    from kflow.components.trainer.training import watched_metric

    examples, schema = inputs
    task = MnistTask(load_schema(schema.file))
    assert watched_metric(task, TrainConfig()) == ("val_loss", "min")  # The task's own.
    assert watched_metric(task, TrainConfig(early_stopping_monitor="val_accuracy")) == ("val_accuracy", "max")
    model, model_run = _outputs(tmp_path)
    config = TrainConfig(epochs=2, early_stopping_patience=1, early_stopping_monitor="val_pr_auc")
    with pytest.raises(ValueError, match=r"early_stopping_monitor: 'val_pr_auc' is not a validation metric of the "
                       r"mnist task \(choose one of val_loss, val_accuracy\)"):  # fmt: skip
        loop.train(task, examples=examples, model=model, model_run=model_run, config=config)
    assert not model.keras_file.exists()  # Refused before training.


def test_early_stopping_stops_fit_too(inputs, tmp_path):
    """The `fit` strategies (default, mirrored, Keras distribution) stop on the task's monitor as the loop does."""

    class FallingLossNeverImproves(MnistTask):
        monitor_mode = "max"

    examples, schema = inputs
    model, model_run = _outputs(tmp_path)
    config = TrainConfig(epochs=6, batch_size=50, steps_per_epoch=3, early_stopping_patience=1)
    summary = fit.train(
        FallingLossNeverImproves(load_schema(schema.file)), examples=examples, model=model, model_run=model_run,
        config=config, working_dir=tmp_path / "work",
    )  # fmt: skip
    assert summary["stopped_early"] is True
    assert summary["epochs"] == 2


@pytest.mark.slow
@pytest.mark.distributed
def test_parameter_server_rerun_resumes_with_the_same_step_counter(inputs, tmp_path):
    examples, schema = inputs
    model, model_run = _outputs(tmp_path)
    common = dict(
        dataset="mnist", examples=examples, schema=schema, model=model, model_run=model_run,
        strategy="parameter_server", workers=2, parameter_servers=1, batch_size=32, working_dir=tmp_path / "work",
    )  # fmt: skip
    first = run(epochs=1, **common)
    second = run(epochs=2, **common)
    assert (first["start_step"], first["final_step"]) == (0, 13)
    # The epochs this run trained are the history's (history.json), not in what the component reports.
    assert (second["start_step"], second["final_step"], second["epochs"]) == (13, 26, 2)
    assert model_run.history["epochs_this_run"] == 1


@pytest.mark.distributed
@pytest.mark.slow  # ~35 s each; make test keeps parameter_server on MNIST (above)
@pytest.mark.parametrize("task", ["quora", "wikitext2"])
def test_parameter_server_trains_the_text_tasks(task, tmp_path):
    """keras-hub's BERT MLM and the Quora classifier (lookup tables inside the model) under 2 workers + 1 PS."""
    from google.protobuf import text_format

    from kflow.pipeline.dsl.artifacts import Schema
    from tests.components.datasets import test_quora, test_wikitext2
    from tests.components.datasets.text_fixtures import write_quora, write_wikitext

    tests_module = {"quora": test_quora, "wikitext2": test_wikitext2}[task]
    examples = (write_quora if task == "quora" else write_wikitext)(tmp_path / "examples")
    schema = Schema(tmp_path / "schema")
    schema.path.mkdir()
    schema.file.write_text(text_format.MessageToString(tests_module.SCHEMA))
    model, model_run = _outputs(tmp_path)
    summary = run(
        examples=examples, schema=schema, model=model, model_run=model_run, dataset=task,
        model_name="text_classifier" if task == "quora" else "bert_mlm", model_options=tests_module.OPTIONS,
        strategy="parameter_server", workers=2, parameter_servers=1, epochs=3, batch_size=16, seed=3,
        optimizer="adamw", learning_rate=3e-3, working_dir=tmp_path / "work",
    )  # fmt: skip
    losses = [epoch["loss"] for epoch in model_run.history["per_epoch"]]
    assert losses[-1] < losses[0]
    assert summary["final_step"] == 3 * -(-(400 if task == "quora" else 300) // 16)
    assert model.keras_file.exists() and (model.serving_uri / "saved_model.pb").exists()
