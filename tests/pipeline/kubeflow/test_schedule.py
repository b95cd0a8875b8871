"""`kflow submit --schedule`: a KFP recurring run, sent to a STAND-IN for the KFP API server (not a backend) that
accepts it only if KFP's API types (kfp_server_api) and the API server's rules do."""

import pytest

from kflow.pipeline.cli.main import main
from kflow.pipeline.kubeflow.cron import kfp_cron
from tests.pipeline.kubeflow.kfp_api_types import recurring_run_problems
from tests.pipeline.kubeflow.stand_in_api_server import stand_in_kfp_api_server
from tests.pipeline.kubeflow.test_submit import DEMO, sent_spec

SUBMIT = ["submit", str(DEMO), "--image", "kflow:0.1.0"]


def test_submit_schedule_creates_a_recurring_run_the_kfp_api_accepts(tmp_path, capsys):
    with stand_in_kfp_api_server() as server:
        args = [*SUBMIT, "--endpoint", server.endpoint, "--experiment", "nightly", "--run-name", "demo-nightly"]
        code = main([*args, "--schedule", "0 3 * * *", "-o", str(tmp_path / "p.yaml")])
        (recurring,) = server.recurring_runs.values()
        experiments = list(server.experiments.values())
    assert code == 0, capsys.readouterr().err
    assert server.refused == [] and server.created_runs() == []  # no one-off run
    assert recurring["display_name"] == "demo-nightly"
    assert recurring["trigger"] == {"cron_schedule": {"cron": "0 0 3 * * *"}}  # crontab → KFP's seconds-first form
    assert recurring["mode"] == "ENABLE" and recurring["no_catchup"] is True
    assert int(recurring["max_concurrency"]) == 1
    assert recurring["experiment_id"] == experiments[0]["experiment_id"]
    assert recurring["pipeline_spec"] == sent_spec(tmp_path / "p.yaml")
    out = capsys.readouterr().out
    assert f"scheduled recurring run 'demo-nightly' (id {recurring['recurring_run_id']}" in out


def test_a_run_time_parameter_goes_with_every_scheduled_run(tmp_path):
    with stand_in_kfp_api_server() as server:
        args = [*SUBMIT, "--endpoint", server.endpoint, "--schedule", "@daily", "--max-concurrency", "2", "--catchup"]
        args += ["--set", "kubeflow.parameters=[trainer.epochs]", "--set", "trainer.epochs=5"]
        assert main(args) == 0
        (recurring,) = server.recurring_runs.values()
    assert recurring["runtime_config"]["parameters"] == {"trainer_epochs": 5}
    assert recurring["trigger"]["cron_schedule"]["cron"] == "@daily"
    assert int(recurring["max_concurrency"]) == 2 and recurring["no_catchup"] is False


def test_the_stand_in_refuses_what_the_kfp_api_refuses():
    """The check is real: a body the KFP API types or server rules refuse is refused, each for its reason."""
    good = {
        "display_name": "r",
        "experiment_id": "e",
        "mode": "ENABLE",
        "max_concurrency": "1",
        "trigger": {"cron_schedule": {"cron": "0 0 3 * * *"}},
        "pipeline_spec": {"pipeline_spec": {"root": {"inputDefinitions": {"parameters": {"a": {}}}}}},
        "runtime_config": {"parameters": {"a": 1}},
    }
    experiments = {"e": {}}
    assert recurring_run_problems(good, experiments) == []
    cases = {
        "trigger/cron_schedul": {**good, "trigger": {"cron_schedul": {"cron": "0 0 3 * * *"}}},
        "MODE_UNSPECIFIED": {**good, "mode": "ON"},
        "6 fields": {**good, "trigger": {"cron_schedule": {"cron": "0 3 * * *"}}},
        "from 1 to 10": {**good, "max_concurrency": "11"},
        "no experiment": {**good, "experiment_id": "x"},
        "not an input": {**good, "runtime_config": {"parameters": {"b": 1}}},
        "/schedule: not a field": {**good, "schedule": "0 3 * * *"},
    }
    for expected, body in cases.items():
        problems = recurring_run_problems(body, experiments)
        assert any(expected in problem for problem in problems), (expected, problems)


@pytest.mark.parametrize(
    ("given", "sent"),
    [
        ("0 3 * * *", "0 0 3 * * *"),
        ("*/15 9-17 * * mon-fri", "0 */15 9-17 * * mon-fri"),
        ("30 0 0 1 jan,jul ?", "30 0 0 1 jan,jul ?"),
        ("@every 6h", "@every 6h"),
    ],
)
def test_kfp_cron_forms(given, sent):
    assert kfp_cron(given) == sent


@pytest.mark.parametrize(
    ("schedule", "said"),
    [
        ("0 3 * *", "a cron has 5 fields"),
        ("0 25 * * *", "the hour field '25' holds 25, outside 0-23"),
        ("0 3 * * sunday", "'sunday', neither a number nor a name"),
        ("@nightly", "not a cron descriptor"),
        ("0 5-3 * * *", "a range from 5 down to 3"),
    ],
)
def test_a_bad_schedule_is_one_line_and_exit_2_before_anything_is_sent(schedule, said, capsys):
    with stand_in_kfp_api_server() as server:
        assert main([*SUBMIT, "--endpoint", server.endpoint, "--schedule", schedule]) == 2
        assert server.requests == []
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("kflow: --schedule: ") and said in err, err


def test_max_concurrency_outside_kfp_bounds_is_exit_2(capsys):
    assert main([*SUBMIT, "--endpoint", "http://127.0.0.1:9", "--schedule", "@daily", "--max-concurrency", "0"]) == 2
    assert "--max-concurrency: must be from 1 to 10 (got 0)" in capsys.readouterr().err
