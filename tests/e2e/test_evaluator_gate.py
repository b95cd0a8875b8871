"""The blessing gate end to end: baseline resolution, the CLI's exit code, `kflow show` and report.html."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kflow.pipeline.app.latest_blessed import find_baseline, model_identity
from kflow.pipeline.app.standard_pipeline import build_pipeline
from kflow.pipeline.cli.run_outcome import gate as _gate
from kflow.pipeline.dsl.config import load_config
from kflow.pipeline.runners.run_record import Run
from tests.conftest import REPO

DEMO = REPO / "pipeline" / "configs" / "demo.yaml"


IRIS = {"name": "iris", "data": {"dataset": "csv", "problem_type": "classification", "label": "species"}}


def fake_run(
    pipeline_dir: Path,
    run_id: str,
    blessed: bool | None,
    status: str = "succeeded",
    config: dict | None = None,
    model_fingerprint: str = "",
    parameters: dict | None = None,
) -> Path:
    """A run folder with a run.json whose evaluate evaluated `<run>/train/model` (blessed or not)."""
    run_dir = pipeline_dir / run_id
    model, blessing = run_dir / "train" / "model", run_dir / "evaluate" / "blessing"
    model.mkdir(parents=True)
    blessing.mkdir(parents=True)
    components = {}
    if blessed is not None:
        (blessing / ("BLESSED" if blessed else "NOT_BLESSED")).touch()
        checks = [{"metric": "accuracy", "bound": "lower_bound", "threshold": 0.9, "value": 0.5, "passed": blessed}]
        verdict = {"blessed": blessed, "checks": checks, "model_module_digest": f"digest-of-{run_id}"}
        (blessing / "blessing.json").write_text(json.dumps(verdict))
        components["evaluate"] = {
            "status": status,
            "parameters": parameters or {"baseline_model_uri": None},
            "inputs": {"model": {"type": "Model", "uri": str(model), "fingerprint": model_fingerprint}},
            "outputs": {"blessing": {"type": "ModelBlessing", "uri": str(blessing)}},
        }
    record = {"run_id": run_id, "metadata": {"config": config or IRIS}, "components": components}
    (run_dir / "run.json").write_text(json.dumps(record))
    return run_dir


def test_the_baseline_is_the_newest_blessed_model_of_a_finished_run(tmp_path):
    identity = model_identity(IRIS)
    assert find_baseline(tmp_path, identity, "new") == {
        "baseline_model_uri": None,
        "baseline_module_digest": None,
        "no_baseline_reason": "no earlier run of 'iris' blessed a model other than this one",
    }
    fake_run(tmp_path, "20260101-000000-aaaa", blessed=True)
    blessed = fake_run(tmp_path, "20260102-000000-bbbb", blessed=True)
    fake_run(tmp_path, "20260103-000000-cccc", blessed=False)
    fake_run(tmp_path, "20260104-000000-dddd", blessed=True, status="failed")
    fake_run(tmp_path, "20260105-000000-eeee", blessed=None)  # Stopped before evaluate.
    assert find_baseline(tmp_path, identity, "new") == {
        "baseline_model_uri": str(blessed / "train" / "model"),
        "baseline_module_digest": "digest-of-20260102-000000-bbbb",  # From its blessing.
        "no_baseline_reason": None,
    }


def test_a_model_is_known_by_its_fingerprint_and_a_config_by_its_identity(tmp_path):
    """The same config with new data bytes or an edited module trains a new model (another fingerprint):
    it is compared with the newest blessed model. The very model blessed before keeps its own baseline."""
    identity = model_identity(IRIS)
    fake_run(tmp_path, "20260101-000000-aaaa", blessed=True, model_fingerprint="m1")
    kept = {"baseline_model_uri": None, "baseline_module_digest": None, "no_baseline_reason": "first"}
    fake_run(tmp_path, "20260102-000000-bbbb", blessed=True, model_fingerprint="m2", parameters=kept)
    assert find_baseline(tmp_path, identity, "m3")["baseline_model_uri"].startswith(str(tmp_path / "20260102"))
    assert find_baseline(tmp_path, identity, "m2") == kept  # A cached train re-evaluated: stays cached.
    # m1's model is not the newest: a rollback to it is compared with the newest blessed one.
    assert find_baseline(tmp_path, identity, "m1")["baseline_model_uri"].startswith(str(tmp_path / "20260102"))

    # Another config under the same name (another dataset or label) never lends or takes a baseline.
    wine = {"name": "iris", "data": {"dataset": "csv", "problem_type": "classification", "label": "cultivar"}}
    fake_run(tmp_path, "20260103-000000-cccc", blessed=True, config=wine, model_fingerprint="w1")
    assert find_baseline(tmp_path, identity, "m3")["baseline_model_uri"].startswith(str(tmp_path / "20260102"))
    alone = find_baseline(tmp_path, model_identity({**wine, "data": {**wine["data"], "label": "colour"}}), "x")
    assert alone["baseline_model_uri"] is None
    assert alone["no_baseline_reason"] == (
        "no earlier run of 'iris' blessed a model of dataset 'csv', problem_type 'classification', label 'colour' "
        "other than this one (3 blessed model(s) passed over: 2 of label 'species'; 1 of label 'cultivar')"
    )


def test_one_config_run_on_several_tables_takes_each_tables_own_baseline(tmp_path):
    """A user trial: table.yaml on breast cancer, then on birthwt (both labelled `target`), then on breast cancer
    again: its baseline was birthwt's model (`reads columns this data lacks`: no comparison), and birthwt's first
    run warm-started from the breast cancer model (0 columns kept). The table (data.source.path) is the model's."""
    cancer, birthwt, third = ({"name": "table", "data": {"dataset": "csv", "label": "target", "source": {"path": path}}}
                              for path in ("/data/cancer.csv", "/data/birthwt.csv", "/data/third.csv"))  # fmt: skip
    fake_run(tmp_path, "20260101-000000-aaaa", blessed=True, config=cancer, model_fingerprint="c1")
    fake_run(tmp_path, "20260102-000000-bbbb", blessed=True, config=birthwt, model_fingerprint="b1")
    again = find_baseline(tmp_path, model_identity(cancer, table=True), "c2")
    assert again["baseline_model_uri"].startswith(str(tmp_path / "20260101")), again
    alone = find_baseline(tmp_path, model_identity(third, table=True), "t1")
    assert alone["baseline_model_uri"] is None and alone["no_baseline_reason"] == (
        "no earlier run of 'table' blessed a model of dataset 'csv', label 'target', data.source.path "
        "'/data/third.csv' other than this one (2 blessed model(s) passed over: 1 of data.source.path "
        "'/data/birthwt.csv'; 1 of data.source.path '/data/cancer.csv')"
    )
    # The same file however spelled (a user trial's /data/../data/cancer.csv took no baseline).
    spelled = {**cancer, "data": {**cancer["data"], "source": {"path": "/data/x/../cancer.csv"}}}
    assert find_baseline(tmp_path, model_identity(spelled, table=True), "c2") == again
    from kflow.pipeline.app.warm_start import newest_blessed

    started = newest_blessed(tmp_path, model_identity(cancer, table=True), None)["warm_start_model_uri"]
    assert started.startswith(str(tmp_path / "20260101")), started
    scratch = newest_blessed(tmp_path, model_identity(third, table=True), None)
    assert scratch == {"warm_start_model_uri": None, "warm_start_reason": "no earlier run of 'table' blessed a model "
                       "trained on other data of data.source.path '/data/third.csv'"}  # fmt: skip


def test_a_kept_baseline_that_is_gone_gives_way_to_an_older_blessed_model_or_none(tmp_path):
    """The very model blessed before keeps what it was blessed against; when that model's run was removed (kflow gc
    of an older kflow, by hand), evaluate failed on the missing folder (a user trial): an older blessed model, if
    any, is its baseline instead, else none with the reason."""
    import shutil

    identity = model_identity(IRIS)
    older = fake_run(tmp_path, "20260101-000000-aaaa", blessed=True, model_fingerprint="m0")
    first = fake_run(tmp_path, "20260102-000000-bbbb", blessed=True, model_fingerprint="m1")
    kept = {"baseline_model_uri": str(first / "train" / "model"), "baseline_module_digest": "d",
            "no_baseline_reason": None}  # fmt: skip
    fake_run(tmp_path, "20260103-000000-cccc", blessed=True, model_fingerprint="m2", parameters=kept)
    assert find_baseline(tmp_path, identity, "m2") == kept
    shutil.rmtree(first)
    assert find_baseline(tmp_path, identity, "m2")["baseline_model_uri"] == str(older / "train" / "model")
    shutil.rmtree(older)
    assert find_baseline(tmp_path, identity, "m2")["baseline_model_uri"] is None


def test_the_builder_resolves_the_baseline_when_the_evaluator_is_about_to_run(tmp_path):
    config = load_config(DEMO, [f"pipeline_root={tmp_path}"])
    blessed = fake_run(tmp_path / "demo", "20260102-000000-bbbb", blessed=True, config=config.to_dict())
    evaluate = {node.id: node for node in build_pipeline(config, local_runs=True).components}["evaluate"]
    assert evaluate.parameters["baseline_model_uri"] is None  # Not yet: it depends on the model's fingerprint.
    evaluate.resolve_run_time_parameters({"model": "new-model", "examples": "e", "schema": "s", "model_run": "r"})
    assert evaluate.parameters["baseline_model_uri"] == str(blessed / "train" / "model")
    assert evaluate.parameters["slices"] == [{"by": "label"}]
    # Compiling for Kubeflow must not depend on what ran locally; `none` never compares.
    compiled = {node.id: node for node in build_pipeline(config).components}["evaluate"]
    assert compiled.run_time_parameters is None and compiled.parameters["baseline_model_uri"] is None
    config = load_config(DEMO, [f"pipeline_root={tmp_path}", "evaluator.baseline=none"])
    evaluate = {node.id: node for node in build_pipeline(config, local_runs=True).components}["evaluate"]
    assert evaluate.run_time_parameters is None
    assert evaluate.parameters["no_baseline_reason"] == "evaluator.baseline is none"


def test_the_cli_gate_fails_or_warns_naming_the_failed_check(tmp_path, capsys):
    run = Run.load(fake_run(tmp_path, "20260101-000000-aaaa", blessed=False))
    assert _gate(run, "fail") == 1
    assert "NOT BLESSED; failed checks: accuracy 0.5000 >= 0.9 [" in capsys.readouterr().err
    assert _gate(run, "warn") == 0
    assert "warning: evaluate: the model is NOT BLESSED" in capsys.readouterr().err
    assert _gate(Run.load(fake_run(tmp_path, "20260102-000000-bbbb", blessed=True)), "fail") == 0


def newest_run(root: Path) -> Path:
    return sorted((root / "demo").glob("*/run.json"))[-1].parent


@pytest.mark.slow
def test_a_worse_model_is_not_blessed_against_the_first(tmp_path, run_kflow):
    """Demo twice: the first model is blessed, a deliberately worse second one is not (exit 1)."""
    first = run_kflow("run", DEMO, "--pipeline-root", tmp_path, "--set", "evaluator.on_not_blessed=fail")
    assert first.returncode == 0, first.stderr[-3000:]
    first_dir = newest_run(tmp_path)
    assert (first_dir / "evaluate" / "blessing" / "BLESSED").exists()

    worse = ("--set", "trainer.epochs=1", "--set", "trainer.optimizer.learning_rate=0.00001")
    second = run_kflow("run", DEMO, "--pipeline-root", tmp_path, *worse, "--set", "evaluator.on_not_blessed=fail")
    assert second.returncode == 1, second.stderr[-3000:]
    assert "NOT BLESSED; failed checks:" in second.stderr and "accuracy change -" in second.stderr
    second_dir = newest_run(tmp_path)
    verdict = json.loads((second_dir / "evaluate" / "blessing" / "blessing.json").read_text())
    assert verdict["blessed"] is False
    assert verdict["baseline_model"] == str(first_dir / "train" / "model")
    assert {check["bound"] for check in verdict["checks"] if not check["passed"]} >= {"max_drop"}

    shown = run_kflow("show", tmp_path / "demo")
    assert shown.returncode == 0
    assert "blessed=False" in shown.stdout and "accuracy change" in shown.stdout
    report = (second_dir / "evaluate" / "evaluation" / "report.html").read_text()
    assert "NOT BLESSED" in report and "accuracy change" in report and "label=9" in report

    # The same worse run with on_not_blessed=warn: fully cached (same baseline), exit 0 with a warning.
    warned = run_kflow("run", DEMO, "--pipeline-root", tmp_path, *worse, "--set", "evaluator.on_not_blessed=warn")
    assert warned.returncode == 0, warned.stderr[-3000:]
    assert "warning: evaluate: the model is NOT BLESSED" in warned.stderr
    record = json.loads((newest_run(tmp_path) / "run.json").read_text())
    assert record["components"]["evaluate"]["status"] == "cached"


@pytest.mark.slow  # Two iris runs (~25 s); make test has the resolver's and the Evaluator's halves, above.
def test_the_same_model_trained_again_under_no_cache_says_only_what_is_true_of_its_baseline(tmp_path, run_kflow):
    """Issue 55 L9: the demo blessed, then trained again with `--no-cache`. The model is the same (same fingerprint),
    so it keeps the parameters it was blessed with (no baseline); the reason it keeps must not say that no earlier
    run blessed a model, since one did: this very model. And a plain re-run after it stays fully cached."""
    quick = ("--set", "trainer.epochs=2", "--set", "evaluator.thresholds.accuracy.lower_bound=0.5")

    def run(*extra):
        done = run_kflow("run", DEMO, "--pipeline-root", tmp_path, *quick, *extra)
        assert done.returncode == 0, done.stderr[-3000:]
        return done, by_sequence(tmp_path / "demo")[-1]

    _, first = run()
    assert (tmp_path / "demo" / first["run_id"] / "evaluate" / "blessing" / "BLESSED").exists()
    done, again = run("--no-cache")
    evaluate = again["components"]["evaluate"]
    assert evaluate["status"] == "succeeded" and again["components"]["train"]["status"] == "succeeded"
    model = first["components"]["evaluate"]["inputs"]["model"]
    assert evaluate["inputs"]["model"]["fingerprint"] == model["fingerprint"]  # The same model, trained again.
    reason = evaluate["parameters"]["no_baseline_reason"]
    assert reason == "no earlier run of 'demo' blessed a model other than this one"
    assert f"evaluate: no baseline: {reason}" in done.stderr
    blessing = json.loads((tmp_path / "demo" / again["run_id"] / "evaluate" / "blessing" / "blessing.json").read_text())
    assert blessing["no_baseline"] == reason

    _, third = run()  # The reason is the one kept, not reworded per run: the Evaluator's cache key holds it.
    assert {component["status"] for component in third["components"].values()} == {"cached"}


def by_sequence(pipeline_dir: Path) -> list[dict]:
    records = [json.loads(path.read_text()) for path in pipeline_dir.glob("*/run.json")]
    return sorted(records, key=lambda record: record["sequence"])


@pytest.mark.slow  # Five iris runs (about 2 min); make test has the resolver's and the Evaluator's halves, above.
def test_the_baseline_follows_data_and_module_edits_and_refuses_a_tampered_module(tmp_path, run_kflow):
    from tests.e2e.test_csv_pipeline import iris_config

    module = tmp_path / "my_model.py"
    module.write_text((REPO / "tests" / "pipeline" / "user" / "iris_model.py").read_text())
    config = iris_config(tmp_path)
    source = tmp_path / "iris.csv"
    settings = ("--set", f"trainer.module={module}", "--set", "trainer.epochs=10")
    pipeline_dir = tmp_path / "runs" / "iris"

    def run(*extra):
        done = run_kflow("run", config, *settings, "--set", "evaluator.on_not_blessed=warn", *extra)
        return done, by_sequence(pipeline_dir)[-1] if pipeline_dir.exists() else None

    def evaluate(record):
        return record["components"]["evaluate"]

    def model_of(record):
        return record["components"]["train"]["outputs"]["model"]["uri"]

    done, first = run()
    assert done.returncode == 0, done.stderr[-3000:]
    reason = "no earlier run of 'iris' blessed a model other than this one"
    assert evaluate(first)["parameters"]["no_baseline_reason"] == reason
    assert f"evaluate: no baseline: {reason}" in done.stderr

    source.write_text(source.read_text().replace("5.1,3.5,1.4,0.2", "5.1,3.5,1.5,0.2", 1))  # Same path, new bytes.
    done, second = run()
    assert done.returncode == 0, done.stderr[-3000:]
    assert second["components"]["train"]["status"] == "succeeded"
    assert evaluate(second)["parameters"]["baseline_model_uri"] == model_of(first)

    done, again = run()  # Nothing changed: the same model keeps the baseline it was blessed against.
    assert done.returncode == 0 and {c["status"] for c in again["components"].values()} == {"cached"}

    module.write_text(module.read_text().replace("HIDDEN_UNITS = 16", "HIDDEN_UNITS = 12"))
    done, third = run()
    assert done.returncode == 0, done.stderr[-3000:]
    assert third["components"]["ingest"]["status"] == "cached"
    assert evaluate(third)["parameters"]["baseline_model_uri"] == model_of(second)

    # Someone rewrites the code of the newest blessed model: the next run refuses to run it as a baseline.
    with open(Path(model_of(third)) / "assets" / "user_module.py", "a") as tampered:
        tampered.write("\nHIDDEN_UNITS = 99\n")
    module.write_text(module.read_text().replace("HIDDEN_UNITS = 12", "HIDDEN_UNITS = 14"))
    done, fourth = run()
    assert done.returncode == 1
    assert "user_module.py changed since it was blessed" in done.stderr
    assert evaluate(fourth)["status"] == "failed"

    # require_baseline: a first run of a new root has none, so it is not blessed, and says why.
    done, _ = run("--pipeline-root", tmp_path / "fresh", "--set", "evaluator.require_baseline=true",
                  "--set", "evaluator.on_not_blessed=fail")  # fmt: skip
    assert done.returncode == 1
    assert f"failed checks: no baseline: {reason} (evaluator.require_baseline)" in done.stderr


def test_a_run_recorded_with_data_task_is_the_same_config_as_one_with_data_problem_type():
    recorded = {"name": "iris", "data": {"dataset": "csv", "task": "classification", "label": "species"}}
    current = {"name": "iris", "data": {"dataset": "csv", "problem_type": "classification", "label": "species"}}
    assert model_identity(recorded) == model_identity(current)
    assert model_identity(recorded) != model_identity({**current, "data": {**current["data"], "label": "colour"}})
