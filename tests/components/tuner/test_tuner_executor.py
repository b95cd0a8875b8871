"""The Tuner's executor on iris through the real CSV ingest: real trial processes training with the Trainer's
executor, an Optuna study in a journal file, pruning, a failing trial, and the test split never read."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from kflow.pipeline.dsl.artifacts import Examples, HyperParameters, Rejects, Schema

REPO = Path(__file__).resolve().parents[3]
IRIS = REPO / "pipeline" / "configs" / "data" / "iris.csv"


@pytest.fixture(scope="module")
def iris(tmp_path_factory):
    """iris through the CSV ingest, its test split then replaced by bytes no reader takes: a trial that read it
    would fail (root reads any file whatever its mode, so unreadable files prove nothing here)."""
    from kflow.components.datasets.csv.ingest.executor import run as ingest

    folder = tmp_path_factory.mktemp("iris")
    examples, schema = Examples(folder / "examples"), Schema(folder / "schema")
    ingest(
        examples=examples,
        schema=schema,
        rejects=Rejects(folder / "rejects"),
        source_path=str(IRIS),
        label="species",
        problem_type="classification",
        split={"train": 8, "eval": 1, "test": 1},
    )
    for path in examples.split_files("test"):
        Path(path).write_bytes(b"not a gzipped TFRecord: a trial read the test split")
    return examples, schema


def trainer_parameters(**overrides):
    from kflow.components.trainer.config import component_parameters

    defaults = {name: p.default for name, p in component_parameters().items() if not p.required}
    return {**defaults, "dataset": "csv", "model_name": "tabular_mlp", "epochs": 4, "batch_size": 16, **overrides}


@pytest.mark.slow  # ~30 s; make test's tuner pipeline (tests/e2e/test_tuner_pipeline.py) runs a search end to end
def test_a_search_records_every_trial_prunes_and_reads_no_test_split(iris, tmp_path):
    from kflow.components.tuner.executor import run

    examples, schema = iris
    output = HyperParameters(tmp_path / "hyperparameters")
    summary = run(
        examples=examples,
        schema=schema,
        hyperparameters=output,
        working_dir=tmp_path / "work",
        search_space={
            "trainer.optimizer.learning_rate": {"log_uniform": [1e-5, 0.05]},
            "trainer.model_options.hidden_units": {"choice": [[8], [32, 16]]},
            "trainer.optimizer.name": {"choice": ["adam", "no_such_optimizer"]},
        },
        algorithm="successive_halving",
        max_trials=6,
        max_time=None,
        objective_metric="val_loss",
        objective_direction=None,
        parallel_trials=2,
        seed=0,  # its first four draws: three trials with adam, then one with the optimizer the Trainer refuses
        trainer=trainer_parameters(),
        trainer_executor="kflow.components.trainer.executor:run",
    )
    trials = output.trials
    states = [trial["state"] for trial in trials]
    assert len(trials) == 6 and sorted(t["number"] for t in trials) == list(range(6))
    # A failing trial (an optimizer the Trainer refuses) is recorded with its error; the others went on.
    failed = [t for t in trials if t["state"] == "failed"]
    assert failed and all("no_such_optimizer" in t["error"] for t in failed)
    assert all(t["settings"]["trainer.optimizer.name"] == "no_such_optimizer" for t in failed)
    # No trial read the test split: every trial the Trainer accepted trained all its epochs or was pruned.
    assert all(t["settings"]["trainer.optimizer.name"] == "adam" for t in trials if t["state"] != "failed")
    for trial in trials:
        if trial["state"] == "completed":
            assert trial["epochs"] == 4 and trial["value"] == trial["curve"][-1]["val_loss"]
        if trial["state"] == "pruned":  # stopped early by the pruner, after fewer epochs than the trainer's 4
            assert trial["epochs"] < 4 and trial["value"] is None
    # Successive halving keeps, at epoch 1, only the best of the trials there so far: a later trial behind is pruned.
    assert summary["trials_pruned"] == states.count("pruned") >= 1
    assert summary["trials_completed"] == states.count("completed") >= 1
    assert summary["trials_failed"] == len(failed)
    best = output.best
    completed = [t for t in trials if t["state"] == "completed"]
    assert best["objective"] == {
        "metric": "val_loss",
        "direction": "minimize",
        "value": min(t["value"] for t in completed),
    }
    assert best["parameters"]["learning_rate"] == best["settings"]["trainer.optimizer.learning_rate"]
    assert best["parameters"]["model_options"] == {
        "hidden_units": best["settings"]["trainer.model_options.hidden_units"]
    }
    with open(output.path / "trials.csv") as file:
        rows = list(csv.DictReader(file))
    assert [row["state"] for row in rows] == states
    assert (output.path / "objective.png").stat().st_size > 1000
    assert (output.path / "study.journal").is_file()
    # The trials' models and checkpoints are gone; their logs are kept.
    assert not (tmp_path / "work" / "trials").exists()
    assert (output.path / "trials" / str(failed[0]["number"]) / "error.log").is_file()


@pytest.mark.slow  # ~18 s: two trials; make test holds the rule's cases (test_refusals_of_some_settings_...)
def test_a_module_refused_before_training_stops_the_search_at_its_second_trial(tmp_path):
    """The docs' table model as written before, keras.Input(name=column), on wine's 'od280/od315_of_diluted_wines',
    which Keras refuses as a layer name: every trial would be refused the same, before training. Before, each of the
    trials ran into it (~10 s each) and the search failed with 'no trial of the search completed'. Two trials of
    different settings refused alike stop it (one could be its settings' own: test_refusals_of_some_settings...)."""
    from kflow.components.tuner.executor import run
    from tests.components.trainer.test_column_names import NAMED_BY_COLUMN, wine_examples

    examples, schema = wine_examples(tmp_path)
    output = HyperParameters(tmp_path / "hyperparameters")
    with pytest.raises(ValueError) as stopped:
        run(examples=examples, schema=schema, hyperparameters=output, working_dir=tmp_path / "work",
            search_space={"trainer.model_options.units": {"int": [4, 64]}}, algorithm="random", max_trials=4,
            max_time=None, objective_metric="val_loss", objective_direction=None, parallel_trials=1, seed=0,
            trainer=trainer_parameters(model_name=None, module="tunable.py", module_source=NAMED_BY_COLUMN),
            trainer_executor="kflow.components.trainer.executor:run")  # fmt: skip
    said = str(stopped.value)
    assert said.startswith("trainer.module: tunable.py:") and "cannot contain character `/`" in said, said
    assert "the search stopped at trial 1:" in said and "\n" not in said, said
    assert [trial["state"] for trial in output.trials] == ["failed", "failed"]


def refusal(number: int, units: int, error: str = "UserModuleError: m.py:3: units must be positive") -> dict:
    return {"number": number, "settings": {"trainer.model_options.units": units}, "state": "failed", "epochs": 0,
            "error": error, "refused": True}  # fmt: skip


def test_refusals_of_some_settings_only_let_the_others_try():
    """A refusal that may be its settings' own (units: 0 in the space) does not stop the search: only two trials of
    different settings refused with the same words do; and none once a trial has trained."""
    from kflow.components.tuner.executor import _refused

    assert _refused([refusal(0, 0)]) is None
    assert _refused([refusal(0, 0), refusal(1, 0)]) is None  # the same settings again
    assert _refused([refusal(0, 0), refusal(1, 8, "UserModuleError: m.py:3: other")]) is None
    assert _refused([refusal(0, 0), refusal(2, 8)])["number"] == 2
    assert _refused([refusal(1, 8), refusal(0, 0)])["number"] == 1  # ended out of order (parallel trials)
    trained = {"number": 1, "settings": {}, "state": "completed", "epochs": 2, "error": None}
    assert _refused([refusal(0, 0), trained, refusal(2, 8)]) is None


def test_tuned_values_are_printed_to_4_significant_digits_and_kept_whole(tmp_path, caplog):
    """A log-uniform draw (0.0012345678901) was printed whole in each trial's log line and the best trial's (`kflow
    show` and `kflow runs` to 3 digits). Each prints it to 4 significant digits; trials.json, trials.csv and best.json
    keep it exact."""
    from kflow.components.tuner.records import finish, shown
    from kflow.pipeline.cli.trained_with import format_settings

    rate = 0.0012345678901
    records = [  # as executor._tell records a trial: its settings and its trial process's result
        {"number": number, "settings": {"trainer.optimizer.learning_rate": value, "trainer.batch_size": 16,
                                        "trainer.optimizer.name": "adam"},
         "state": "completed", "value": loss, "curve": [{"epoch": 1, "val_loss": loss}], "epochs": 1,
         "seconds": 1.5, "error": None, "last": loss, "refused": False}
        for number, value, loss in ((0, 0.04567891234, 0.9), (1, rate, 0.4))
    ]  # fmt: skip
    output = HyperParameters(tmp_path / "hyperparameters")
    output.path.mkdir()
    with caplog.at_level("INFO", logger="kflow.tuner"):
        finish(output, records, {"metric": "val_loss", "direction": "minimize"}, trainer_parameters())
    # What a user reads: the trial's log line, the best trial's, `kflow show` and `kflow runs` (format_settings).
    assert shown(records[1]["settings"]) == "batch_size=16, optimizer.learning_rate=0.001235, optimizer.name=adam"
    assert "with batch_size=16, optimizer.learning_rate=0.001235, optimizer.name=adam" in caplog.text
    assert "0.0012345678901" not in caplog.text
    assert format_settings(output.best["settings"]) == 'batch_size=16 learning_rate=0.001235 name="adam"'
    # The artifacts: each value whole.
    assert output.best["settings"]["trainer.optimizer.learning_rate"] == rate
    assert output.best["parameters"]["learning_rate"] == rate
    assert [trial["settings"]["trainer.optimizer.learning_rate"] for trial in output.trials] == [0.04567891234, rate]
    with open(output.path / "trials.csv") as file:
        assert [float(row["trainer.optimizer.learning_rate"]) for row in csv.DictReader(file)] == [0.04567891234, rate]


@pytest.mark.slow  # ~50 s: four trials
def test_a_search_space_holding_a_value_the_module_refuses_trains_the_others(tmp_path):
    """units: 0, which Keras refuses (`Dense(0)`), beside 8 in the space: its trials are refused, the others train,
    and the best is one of them. Before, the first refused trial stopped the search."""
    from kflow.components.tuner.executor import run
    from tests.components.trainer.test_column_names import DOCS_MODULE, wine_examples

    units_module = DOCS_MODULE.replace("layers.Dense(32,", 'layers.Dense(options["units"],')
    assert 'options["units"]' in units_module
    examples, schema = wine_examples(tmp_path)
    output = HyperParameters(tmp_path / "hyperparameters")
    summary = run(examples=examples, schema=schema, hyperparameters=output, working_dir=tmp_path / "work",
                  search_space={"trainer.model_options.units": {"choice": [0, 8]}}, algorithm="random", max_trials=4,
                  max_time=None, objective_metric="val_loss", objective_direction=None, parallel_trials=1, seed=1,
                  trainer=trainer_parameters(model_name=None, module="units.py", module_source=units_module, epochs=2),
                  trainer_executor="kflow.components.trainer.executor:run")  # fmt: skip
    states = {
        trial["number"]: (trial["state"], trial["settings"]["trainer.model_options.units"]) for trial in output.trials
    }
    assert {units for state, units in states.values() if state == "failed"} == {0}, states
    assert {units for state, units in states.values() if state == "completed"} == {8}, states
    assert len(states) == 4 and summary["trials_failed"] >= 1 and summary["trials_completed"] >= 1, states
    assert states[summary["best_trial"]] == ("completed", 8)


def trial_processes(folder: Path) -> list[int]:
    """The pids of the trial processes whose spec is under `folder`, read from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            command = (entry / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if "kflow.components.tuner.trial" in command and str(folder) in command:
            found.append(int(entry.name))
    return found


def test_ctrl_c_stops_every_trial_process(iris, tmp_path):
    """A search interrupted while two trials train: the tuner exits and leaves no trial process behind."""
    import signal
    import subprocess
    import sys
    import time

    examples, schema = iris
    code = f"""
import faulthandler, signal
faulthandler.register(signal.SIGUSR1, all_threads=True)  # the test's stack dump should the search not stop
from kflow.components.tuner.executor import run
from kflow.pipeline.dsl.artifacts import Examples, HyperParameters, Schema
from tests.components.tuner.test_tuner_executor import trainer_parameters
run(examples=Examples({examples.uri!r}), schema=Schema({schema.uri!r}),
    hyperparameters=HyperParameters({str(tmp_path / "out")!r}), working_dir={str(tmp_path / "work")!r},
    search_space={{"trainer.optimizer.learning_rate": {{"log_uniform": [1e-3, 1e-2]}}}}, algorithm="random",
    max_trials=4, max_time=None, objective_metric="val_loss", objective_direction=None, parallel_trials=2, seed=0,
    trainer=trainer_parameters(epochs=100000), trainer_executor="kflow.components.trainer.executor:run")
"""
    tuner = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while len(trial_processes(tmp_path)) < 2:
            assert tuner.poll() is None, tuner.stderr.read()[-2000:]
            assert time.monotonic() < deadline, "the trials did not start"
            time.sleep(0.2)
        time.sleep(3)  # training, TensorFlow's threads running
        tuner.send_signal(signal.SIGINT)
        try:
            assert tuner.wait(timeout=30) != 0
        except subprocess.TimeoutExpired:
            tuner.send_signal(signal.SIGUSR1)  # where it hangs, in the failure's message
            time.sleep(2)
            tuner.kill()
            pytest.fail(f"the search did not stop within 30 s of Ctrl-C:\n{tuner.communicate()[1][-6000:]}")
    finally:
        tuner.kill()
    deadline = time.monotonic() + 10
    while trial_processes(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert trial_processes(tmp_path) == []
    assert not (tmp_path / "work" / "trials").exists()  # their folders removed too


def test_a_regressions_errors_are_minimised_and_its_r2_maximised():
    """The tuner maximised val_rmse (its name holds no 'loss' nor 'error') and took a regression's worst trial."""
    from kflow.components.tuner.search_space import direction_of

    lower = ("val_loss", "val_rmse", "val_mae", "val_mean_squared_error", "perplexity", "val_masked_loss")
    higher = ("val_accuracy", "val_auc", "val_r2", "val_masked_accuracy", "val_pr_auc", "val_macro_f1")
    assert {direction_of(metric, None) for metric in lower} == {"minimize"}
    assert {direction_of(metric, None) for metric in higher} == {"maximize"}
    assert direction_of("val_rmse", "maximize") == "maximize"  # as given


@pytest.mark.slow  # ~20 s: two trials of one epoch
def test_an_objective_the_modules_metrics_do_not_report_stops_the_search_at_its_second_trial(iris, tmp_path):
    """A module whose metrics() name their own (`acc`), searched for val_accuracy, which validate cannot know: every
    trial failed after its first epoch, and the search went on through all of them."""
    from kflow.components.tuner.executor import run

    module = (
        "import keras\n\n\ndef build_model(schema, options):\n"
        "    inputs = {f['name']: keras.Input(shape=(1,), name=f['input_name']) for f in options['features']}\n"
        "    joined = keras.layers.concatenate(list(inputs.values()))\n"
        "    return keras.Model(inputs, keras.layers.Dense(3, activation='softmax')(joined))\n\n\n"
        "def metrics():\n    return [keras.metrics.SparseCategoricalAccuracy(name='acc')]\n"
    )
    examples, schema = iris
    output = HyperParameters(tmp_path / "hyperparameters")
    with pytest.raises(ValueError) as stopped:
        run(examples=examples, schema=schema, hyperparameters=output, working_dir=tmp_path / "work",
            search_space={"trainer.optimizer.learning_rate": {"log_uniform": [1e-4, 0.1]}}, algorithm="random",
            max_trials=5, max_time=None, objective_metric="val_accuracy", objective_direction=None, parallel_trials=1,
            seed=0, trainer=trainer_parameters(model_name=None, module="acc.py", module_source=module, epochs=3),
            trainer_executor="kflow.components.trainer.executor:run")  # fmt: skip
    said = str(stopped.value)
    assert said.startswith("objective.metric 'val_accuracy' is not a validation metric of this training (val_acc,")
    assert "the search stopped at trial 1:" in said, said
    assert [trial["state"] for trial in output.trials] == ["failed", "failed"]


@pytest.mark.slow  # ~60 s: two trials, each a cluster of two workers
def test_trials_under_a_local_cluster_are_scored_on_the_history_their_training_wrote(iris, tmp_path):
    """A user trial: under multi_worker_mirrored every trial trained to its end and was then recorded failed
    ('ended the training as no number'): the cluster's epochs reach no listener in the trial's process."""
    from kflow.components.tuner.executor import run

    examples, schema = iris
    output = HyperParameters(tmp_path / "hyperparameters")
    summary = run(examples=examples, schema=schema, hyperparameters=output, working_dir=tmp_path / "work",
                  search_space={"trainer.optimizer.learning_rate": {"choice": [0.001, 0.05]}}, algorithm="random",
                  max_trials=2, max_time=None, objective_metric="val_loss", objective_direction=None, parallel_trials=1,
                  seed=0, trainer=trainer_parameters(strategy="multi_worker_mirrored", workers=2, epochs=2),
                  trainer_executor="kflow.components.trainer.executor:run")  # fmt: skip
    assert summary["trials_completed"] == 2, output.trials
    assert all(len(trial["curve"]) == 2 and trial["value"] == trial["curve"][-1]["val_loss"] for trial in output.trials)
