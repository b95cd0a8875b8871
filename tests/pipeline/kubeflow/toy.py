"""Toy components for the launcher tests: they run as every replica of a cluster job and say which one they were."""

import json
import os
import time

from kflow.pipeline.dsl import heartbeat
from kflow.pipeline.dsl.artifacts import Artifact, Examples
from kflow.pipeline.dsl.component import Component, ComponentSpec, Parameter


def _replica() -> str:
    task = json.loads(os.environ.get("TF_CONFIG", "{}")).get("task", {})
    return f"{task.get('type', 'worker')}-{task.get('index', os.environ.get('PROCESS_ID', 0))}"


def sum_and_sign(*, left, total, add, sleep, fail_on_first_attempt, stall, link_to, working_dir):
    """Writes left + add and the replica that wrote it; `fail_on_first_attempt` names a replica that fails once;
    `stall` names one that beats three steps, then waits forever (its own watchdog ends it, as a pod's would);
    `link_to` a path that `token.txt` among the outputs links to (a hostile replica)."""
    replica = _replica()
    print(f"summing as {replica}", flush=True)
    if replica == stall:
        beats = heartbeat.start(working_dir / heartbeat.HEARTBEATS, replica, 2.0, watch=True)
        for step in range(1, 4):
            beats.beat(step)
        time.sleep(600)
    attempt = os.environ.get("KFLOW_RESTART_ATTEMPT", "0")
    if replica == fail_on_first_attempt and attempt == "0":
        raise RuntimeError(f"{replica} fails on attempt {attempt}")
    time.sleep(sleep)
    value = int((left.path / "value.txt").read_text()) + add
    (total.path / "value.txt").write_text(str(value))
    (total.path / "replica.txt").write_text(f"{replica} attempt {attempt}")
    if link_to:
        (total.path / "token.txt").symlink_to(link_to)
    return {"total": value}


class SumAndSign(Component):
    spec = ComponentSpec(
        inputs={"left": Examples},
        outputs={"total": Artifact},
        parameters={
            "add": Parameter(int, default=0),
            "sleep": Parameter(float, default=0.0),
            "fail_on_first_attempt": Parameter(str, default=""),
            "stall": Parameter(str, default=""),
            "link_to": Parameter(str, default=""),
        },
        executor="tests.pipeline.kubeflow.toy:sum_and_sign",
    )
