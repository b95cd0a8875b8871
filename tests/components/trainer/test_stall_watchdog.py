"""No silent hangs: a cluster that stops finishing steps fails within `trainer.stall_timeout`, naming who stopped."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from kflow.components.trainer import launcher
from kflow.components.trainer.config import TrainConfig
from kflow.pipeline.dsl import heartbeat
from tests.components.fixtures import cluster_spec, write_examples, write_schema

STALL_TIMEOUT = 15.0


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    root = tmp_path_factory.mktemp("stall-inputs")
    return write_examples(root / "examples"), write_schema(root / "schema")


def _train_and_stop(inputs, tmp_path, who):
    """A 2-worker MWMS cluster whose processes `who` get SIGSTOP once worker-1 finished 5 steps; returns (seconds
    from the stop to the failure, the failure, the log)."""
    examples, schema = inputs
    work = tmp_path / "work"
    config = TrainConfig(strategy="multi_worker_mirrored", epochs=50, batch_size=32, stall_timeout=STALL_TIMEOUT)
    spec = cluster_spec(tmp_path, examples, schema, config)
    stopped_at = []

    def stop_once_it_trains(processes):
        def watch():
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                if heartbeat.last_beats(work / "heartbeats").get("worker-1", {}).get("step", 0) >= 5:
                    for name in who:
                        os.kill(processes[name].pid, signal.SIGSTOP)
                    stopped_at.append(time.monotonic())
                    return
                time.sleep(0.05)

        threading.Thread(target=watch, daemon=True).start()

    sink = io.StringIO()
    with pytest.raises(launcher.ClusterError) as failure:
        launcher.launch(spec, spec_dir=work, workers=2, sink=sink, on_start=stop_once_it_trains, timeout=600)
    seconds = time.monotonic() - stopped_at[0]
    print(f"stopped {', '.join(who)} -> failed in {seconds:.1f} s: {failure.value}")
    return seconds, str(failure.value), sink.getvalue()


@pytest.mark.slow  # ~24 s; make test keeps a failing worker failing the launch (test_distributed.py).
@pytest.mark.distributed
def test_a_stopped_worker_fails_a_local_cluster_within_the_stall_timeout_naming_it(inputs, tmp_path):
    """TensorFlow's own collective health check aborts worker-0's all-reduce first (~15 s here); the line names the
    stopped worker either way."""
    seconds, message, _ = _train_and_stop(inputs, tmp_path, ["worker-1"])
    assert "stopped (SIGSTOP or a debugger): worker-1" in message and "worker-0 at step" in message
    assert seconds < STALL_TIMEOUT + 15


@pytest.mark.distributed
@pytest.mark.slow  # ~40 s; the stopped-worker test above and the pod's own watchdog below stay in make test
def test_a_cluster_that_stops_entirely_fails_by_the_stall_watch_with_its_stacks(inputs, tmp_path):
    seconds, message, log = _train_and_stop(inputs, tmp_path, ["worker-0", "worker-1"])
    assert (
        "the cluster stalled: no process finished a training step for 1" in message
        and "stopped (SIGSTOP or a debugger): worker-0, worker-1" in message
    )
    assert STALL_TIMEOUT < seconds < STALL_TIMEOUT + 15  # the watch checks every 0.2 s; stacks get 1 s; stop 5 s


CHILD = """
import sys, time
from pathlib import Path
from kflow.pipeline.dsl import heartbeat
beats = heartbeat.start(Path(sys.argv[1]), "worker-1", 2.0, watch=True)
for step in range(1, 4):
    beats.beat(step)
    time.sleep(0.1)
time.sleep(60)  # a collective that never returns
"""


def test_a_pod_whose_steps_stop_reports_and_exits_on_its_own(tmp_path):
    """In a pod no launcher watches: the process watches its own beats, writes the report and exits 75."""
    (tmp_path / "worker-0").write_text("7\n")  # another replica's beat, in the shared folder
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert result.returncode == heartbeat.STALLED_EXIT and time.monotonic() - started < 15
    report = json.loads((tmp_path / "stall.json").read_text())
    assert report["replica"] == "worker-1" and report["beats"]["worker-1"]["step"] == 3
    assert report["beats"]["worker-0"]["step"] == 7
    assert "kflow: worker-1 finished no training step for" in result.stderr
    assert 'File "<string>", line 9' in result.stderr  # where the main thread waited
