"""SIGINT while a real ingest's Beam stage runs: Beam re-raises the `Cancelled` met in its DoFn as a RuntimeError
(`…Cancelled: SIGINT [while running …]`); the component is still recorded `cancelled`, not `failed`, and its
partial output removed, not kept in `<run>/ingest.failed/` (issue 55 L1: 2 tries of 5 went wrong)."""

from __future__ import annotations

import json
import signal
import time

import pytest

from tests.reliability.big_csv import KflowRun, big_csv_config


# In make test-all only (11-13 s each); make test cancels a multi-process ingest's Beam stage by Ctrl-C (below).
@pytest.mark.slow
@pytest.mark.parametrize(("signum", "exit_code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_during_an_ingests_beam_stage_cancels_the_component_too(tmp_path, signum, exit_code):
    config = big_csv_config(tmp_path, repeats=300)  # 6 MB: its Beam stage takes some 6 s here
    # The bug was intermittent (where in Beam the signal lands): several tries, at several points of the stage.
    for attempt, delay in enumerate((0.5, 1.5, 3.0)):
        root = tmp_path / f"runs-{attempt}"
        run = KflowRun(config, root, "--until", "ingest")
        try:
            # The records are read and counted, then the Beam stage that writes the Examples starts.
            assert run.wait_for_line("csv ingest: 132600 record(s)", 120), run.stderr[-3000:]
            time.sleep(delay)
            (run_file,) = root.glob("big/*/run.json")
            assert json.loads(run_file.read_text())["components"]["ingest"]["status"] == "running", "ended too soon"
            run.process.send_signal(signum)
            assert run.wait(timeout=30) == exit_code, run.stderr[-3000:]
        finally:
            run.kill()
        record = json.loads(run_file.read_text())
        statuses = (record["status"], record["components"]["ingest"]["status"])
        assert statuses == ("cancelled", "cancelled"), (delay, record["components"]["ingest"].get("error"))
        assert "error" not in record["components"]["ingest"]
        leftovers = [path.name for path in run_file.parent.iterdir() if path.name not in ("run.json", "run.lock")]
        assert leftovers in ([], [".staging"]), leftovers  # nothing kept as a failure's, nothing published
        assert not list((run_file.parent / ".staging").glob("*"))
        kflow_lines = [line for line in run.stderr.splitlines() if line.startswith("kflow:")]
        name = signal.Signals(signum).name
        assert kflow_lines == [f"kflow: cancelled by {name}; finished components are kept for the next run"]


def test_ctrl_c_at_a_terminal_during_a_multi_process_ingest_is_one_line_and_stops_every_worker(tmp_path):
    """A terminal's Ctrl-C signals every process of the run's group, Beam's SDK workers too: each printed its
    KeyboardInterrupt traceback and Beam's threads theirs (`Exception in thread run_worker: … Worker subprocess exited
    with return code -2`, `Python sdk harness failed`), mixed, after kflow's line. Now that line alone."""
    import os

    import psutil

    config = big_csv_config(tmp_path, repeats=300)
    root = tmp_path / "runs"
    workers = ["--set", "beam.options.direct_running_mode=multi_processing"]
    workers += ["--set", "beam.options.direct_num_workers=2"]
    run = KflowRun(config, root, "--until", "ingest", *workers, start_new_session=True)
    try:
        assert run.wait_for_line("csv ingest: 132600 record(s)", 120), run.stderr[-3000:]
        time.sleep(1.5)
        started = psutil.Process(run.process.pid).children(recursive=True)
        assert any("sdk_worker_main" in " ".join(child.cmdline()) for child in started), "no SDK worker process"
        os.killpg(run.process.pid, signal.SIGINT)  # as a terminal does
        assert run.wait(timeout=30) == 130, run.stderr[-3000:]
    finally:
        run.kill()
    said = [line for line in run.stderr.splitlines() if not line[:2].isdigit()]  # all but the log's timed lines
    assert said == ["kflow: cancelled by SIGINT; finished components are kept for the next run"], run.stderr[-3000:]
    assert not [child for child in started if child.is_running() and child.status() != psutil.STATUS_ZOMBIE]


@pytest.mark.slow  # A training and a predict (~18 s); make test cancels an ingest's Beam stage, above.
def test_a_signal_during_kflow_predict_says_cancelled_in_one_line_and_leaves_no_output(tmp_path):
    """Ctrl-C while `kflow predict` ingests new data: exit 130, one `kflow:` line, neither OUT nor its staging
    folder left behind (it was an exit without a word, its staging folder kept)."""
    config = big_csv_config(tmp_path, repeats=1)
    root = tmp_path / "runs"
    trained = KflowRun(config, root)
    try:
        assert trained.wait(timeout=300) == 0, trained.stderr[-3000:]
    finally:
        trained.kill()
    scored, output = tmp_path / "big.csv", tmp_path / "scores"
    scored.write_text("\n".join([scored.read_text().splitlines()[0], *scored.read_text().splitlines()[1:] * 300]))
    predict = KflowRun(config, root, "--data", str(scored), "-o", str(output), command_name="predict")
    try:
        assert predict.wait_for_line("csv ingest: 132600 record(s)", 120), predict.stderr[-3000:]
        time.sleep(0.5)
        predict.process.send_signal(signal.SIGINT)
        assert predict.wait(timeout=30) == 130, predict.stderr[-3000:]
    finally:
        predict.kill()
    kflow_lines = [line for line in predict.stderr.splitlines() if line.startswith("kflow:")]
    assert kflow_lines == [f"kflow: predict cancelled by SIGINT; nothing was written to {output}"], predict.stderr
    assert "Traceback" not in predict.stderr
    assert sorted(path.name for path in tmp_path.iterdir()) == ["big.csv", "big.yaml", "diabetes.csv", "runs"]
