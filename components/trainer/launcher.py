"""Starts a local training cluster on loopback: N workers, M parameter servers and a coordinator.

Each process gets its own `TF_CONFIG` (the layout Kubeflow's Training Operator writes for a
TFJob) or, for a JAX strategy, the variables a JAXJob's pods get (`COORDINATOR_ADDRESS`,
`COORDINATOR_PORT`, `NUM_PROCESSES`, `PROCESS_ID`) with `KERAS_BACKEND=jax`; it runs
in its own process group, and has its output streamed with a `[worker-0] ` prefix. If any
process fails, the whole cluster is stopped (terminate, then kill) and restarted from the
last checkpoint, up to `max_restarts` times. Nothing is left running after success,
failure or Ctrl-C.
"""

from __future__ import annotations

import collections
import contextlib
import contextvars
import functools
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from kflow.components.trainer import process_group
from kflow.components.trainer.config import TrainerSettings
from kflow.components.trainer.private_network import private_network, unreachable_hint
from kflow.components.trainer.strategies import get_strategy
from kflow.components.trainer.strategies.cluster_env import in_cluster
from kflow.components.trainer.warm_workers import ClusterShape, WarmCluster, claim, warm_cluster, worker_command
from kflow.components.util.progress import EventBar
from kflow.components.util.progress import mode as progress_mode
from kflow.pipeline.dsl.heartbeat import HEARTBEATS, beats_line, last_beats

log = logging.getLogger("kflow.trainer.launcher")


class ClusterError(RuntimeError):
    """A training cluster process failed (after all restarts)."""


def free_ports(count: int) -> list[int]:
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


# After training ends, how long the sidecar evaluator may take over its last checkpoint before it is stopped.
EVALUATOR_GRACE_SECONDS = 300.0


def process_environment(
    strategy: str, cluster: dict[str, list[str]], kind: str, index: int, devices: int | None = None
) -> dict[str, str]:
    """The variables that tell one process of the cluster who it is, as Kubeflow's Training Operator sets them."""
    if get_strategy(strategy).backend != "jax":  # (an evaluator task is outside the cluster it reads)
        return {"TF_CONFIG": json.dumps({"cluster": cluster, "task": {"type": kind, "index": index}})}
    host, _, port = cluster["worker"][0].rpartition(":")
    environment = {
        "KERAS_BACKEND": "jax",
        "COORDINATOR_ADDRESS": host,
        "COORDINATOR_PORT": port,
        "NUM_PROCESSES": str(len(cluster["worker"])),
        "PROCESS_ID": str(index),
    }
    if devices:  # N CPU devices for this process; XLA reads the flag once, when JAX starts.
        flags = os.environ.get("XLA_FLAGS", "")
        environment["XLA_FLAGS"] = f"{flags} --xla_force_host_platform_device_count={devices}".strip()
    return environment


def cluster_spec(strategy: str, workers: int, parameter_servers: int) -> dict[str, list[str]]:
    """The `cluster` part of TF_CONFIG on fresh loopback ports, its roles as the strategy lays them out."""
    replicas = get_strategy(strategy).replicas(workers, parameter_servers)
    if not replicas:
        raise ValueError(f"strategy {strategy!r} does not run as a cluster")
    ports = iter(free_ports(sum(replicas.values())))
    return {role: [f"127.0.0.1:{next(ports)}" for _ in range(count)] for role, count in replicas.items()}


def process_environments(
    strategy: str, cluster: dict[str, list[str]], devices: int | None, evaluator: bool, bar: bool
) -> tuple[dict[str, dict[str, str]], str]:
    """({process name: its environment}, the process that reports the progress), in the order they start: the
    serving roles first, the chief (if any) last; a sidecar evaluator, outside the cluster, after them."""
    environment = dict(os.environ)
    environment.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    environment["PYTHONUNBUFFERED"] = "1"
    # The chief (worker 0 without one) reports the progress: as a bar drawn here, or as its own log lines.
    reporter = "chief-0" if "chief" in cluster else "worker-0"
    tasks = [(kind, index) for kind in reversed(list(cluster)) for index in range(len(cluster[kind]))]
    environments = {}
    for kind, index in tasks + ([("evaluator", 0)] if evaluator else []):
        name = f"{kind}-{index}"
        environments[name] = dict(
            environment,
            **process_environment(strategy, cluster, kind, index, devices),
            KFLOW_PROGRESS=("events" if bar else "plain") if name == reporter else "off",
        )
    return environments, reporter


def warm_up(parameters: dict) -> contextlib.AbstractContextManager:
    """The Trainer's `warm_up` (ComponentSpec): its local cluster's processes started now, offered to its launcher
    until the run ends (warm_workers.py); for one process that trains in the runner's own, its logical devices; nothing
    in a cluster job's pod."""
    settings = TrainerSettings.from_parameters(parameters)
    config, cluster_config = settings.training, settings.cluster
    strategy = get_strategy(config.strategy)
    if in_cluster():
        return contextlib.nullcontext()
    if not strategy.multi_process:
        if cluster_config.devices:
            # mirrored's logical devices, split now: another node of the run (a Transform's Keras layers) would
            # otherwise initialise TensorFlow's devices in this process first, after which they cannot be split.
            strategy.runtime_class().configure(cluster_config.devices)
        return contextlib.nullcontext()
    shape = cluster_shape(
        config.strategy, cluster_config.workers, cluster_config.parameter_servers, cluster_config.devices,
        cluster_config.sidecar_evaluator,
    )  # fmt: skip
    return warm_cluster(lambda: _warm_processes(shape, cluster_config.workers, cluster_config.parameter_servers))


def cluster_shape(
    strategy: str, workers: int, parameter_servers: int, devices: int | None, evaluator: bool
) -> ClusterShape:
    """What a warm cluster must be for this launch to take it: the roles as the strategy lays them out."""
    replicas = get_strategy(strategy).replicas(workers, parameter_servers)
    return ClusterShape(strategy, tuple(replicas.items()), devices, evaluator)


def _warm_processes(shape: ClusterShape, workers: int, parameter_servers: int) -> WarmCluster:
    cluster = cluster_spec(shape.strategy, workers, parameter_servers)  # its ports told later
    environments, _ = process_environments(shape.strategy, cluster, shape.devices, shape.evaluator, False)
    network = contextlib.ExitStack()
    prefix = network.enter_context(private_network(len(environments)))
    log.info("train: warming up the %s cluster's %d process(es) while the components before it run",
             shape.strategy, len(environments))  # fmt: skip
    spawn = functools.partial(process_group.spawn, stdin=subprocess.PIPE)
    return WarmCluster(shape, environments, spawn, prefix, network)


@dataclass
class _Process:
    name: str
    popen: subprocess.Popen
    threads: list[threading.Thread] = field(default_factory=list)
    tail: collections.deque = field(default_factory=lambda: collections.deque(maxlen=40))  # its last lines


def _stream(prefix: str, pipe, sink, bar: EventBar | None = None, tail: collections.deque | None = None) -> None:
    """Copies a process's lines to `sink`, prefixed, and keeps the last in `tail`; its progress events drive `bar`
    instead."""
    for line in iter(pipe.readline, ""):
        if tail is not None:
            tail.append(line)
        text = f"[{prefix}] {line}" if line.endswith("\n") else f"[{prefix}] {line}\n"
        try:
            if bar is not None and bar.handle(line):
                continue
            if bar is not None:
                bar.write(text, sink)
                continue
        except Exception as error:  # The relay must go on draining the pipe, or the process writing to it blocks.
            log.warning("progress relay of %s: %s", prefix, error)
        sink.write(text)
        sink.flush()
    pipe.close()


def _others(training: list[_Process], folder: Path | None) -> str:
    """What else the failure line should say: processes that are stopped, and the last steps of each."""
    stopped = [p.name for p in training if _state(p.popen.pid) == "T"]
    said = f"; stopped (SIGSTOP or a debugger): {', '.join(stopped)}" if stopped else ""
    beats = last_beats(folder) if folder is not None else {}
    return said + ("; last steps: " + ", ".join(f"{n} at step {b['step']}" for n, b in beats.items()) if beats else "")


def _stalled(training: list[_Process], folder: Path, stall_timeout: float, running: float) -> str | None:
    """Why the cluster counts as stalled (no beat for `stall_timeout` s), or None while it trains."""
    beats = last_beats(folder)
    newest = min((beat["seconds_ago"] for beat in beats.values()), default=running)
    if min(newest, running) <= stall_timeout:
        return None
    stopped = [p.name for p in training if _state(p.popen.pid) == "T"]
    for process in training:  # Their threads' Python stacks, into the log (faulthandler in the worker).
        with contextlib.suppress(ProcessLookupError):
            os.kill(process.popen.pid, signal.SIGUSR1)
    time.sleep(1.0)  # for the stacks to reach the log before the cluster is stopped
    who = f"; stopped (SIGSTOP or a debugger): {', '.join(stopped)}" if stopped else ""
    line = f"no process finished a training step for {newest:.0f} s; {beats_line(beats)}"
    return f"the cluster stalled: {line}{who} (trainer.stall_timeout: {stall_timeout:g} s)"


def _state(pid: int) -> str:
    """The process's state letter (R running, S sleeping, T stopped, ...), '' when it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""


def _stop(processes: list[_Process], grace: float = 5.0) -> None:
    """Stops the processes' groups (process_group.stop), then joins their relaying threads."""
    process_group.stop([process.popen for process in processes], grace)
    for process in processes:
        for thread in process.threads:
            thread.join(timeout=2)


def run_cluster(
    spec_file: Path,
    *,
    strategy: str,
    workers: int,
    parameter_servers: int = 0,
    devices: int | None = None,
    evaluator: bool = False,
    timeout: float | None = None,
    sink=None,
    on_start=None,
    stall_timeout: float | None = None,
    heartbeats: Path | None = None,
    warm: WarmCluster | None = None,
) -> None:
    """Runs one incarnation of the cluster until the training processes finish; raises ClusterError on failure.

    With `stall_timeout`, the training processes' beats in `heartbeats` are watched: when none came for that
    long, the processes are asked for their Python stacks (SIGUSR1, into the log) and the cluster fails,
    naming the ones that stopped (pipeline/dsl/heartbeat.py).

    Under parameter_server the chief (coordinator) is the process whose exit ends the run;
    the worker and ps servers are then stopped. `on_start(processes)` gets the `{name: Popen}`
    map once everything is started, in this thread (the executor loads TensorFlow there; tests kill a worker).
    `warm`: processes started early (warm_workers.py), taken where they were started as these would be.
    """
    sink = sink or sys.stderr  # Logs, not results: stdout is for the run summary.
    cluster = cluster_spec(strategy, workers, parameter_servers)
    bar = EventBar() if progress_mode() == "bar" else None
    environments, reporter = process_environments(strategy, cluster, devices, evaluator, bar is not None)
    processes: list[_Process] = []
    if heartbeats is not None:
        shutil.rmtree(heartbeats, ignore_errors=True)  # an earlier attempt's beats are no news
    network = contextlib.ExitStack()
    try:
        if warm is None:
            prefix = network.enter_context(private_network(len(environments)))  # no host can reach its ports
        else:
            prefix = warm.prefix  # its network, removed (with the warm processes not taken) when this cluster ends
            network.callback(warm.close)
        for name, env in environments.items():
            popen = warm.take(name, env, [str(spec_file)]) if warm is not None else None
            if popen is None:
                popen = process_group.spawn([*prefix, *worker_command(), str(spec_file)], env)
            process = _Process(name, popen)
            shown = bar if name == reporter else None
            # In the caller's context (contextvars), so that what the runner tags its node's log lines with
            # (several nodes may train at once) holds for the workers' relayed lines too.
            stream = functools.partial(contextvars.copy_context().run, _stream)
            thread = threading.Thread(target=stream, args=(name, popen.stdout, sink, shown, process.tail), daemon=True)
            thread.start()
            process.threads.append(thread)
            processes.append(process)
        if on_start is not None:
            on_start({process.name: process.popen for process in processes})
        sidecar = [p for p in processes if p.name.startswith("evaluator")]
        training = [p for p in processes if p not in sidecar]
        # The processes whose exit ends the run: the chief under PS, every worker otherwise.
        finishers = [p for p in training if p.name.startswith("chief")] or training
        started = time.monotonic()
        while True:
            for process in training:
                code = process.popen.poll()
                if code not in (None, 0):
                    for thread in process.threads:  # its last lines, the error's among them
                        thread.join(timeout=2)
                    why = _others(training, heartbeats) + unreachable_hint(prefix, process.tail)
                    raise ClusterError(f"{process.name} failed with exit code {code}{why}")
                if code == 0 and process not in finishers:
                    raise ClusterError(f"{process.name} exited before training finished")
            if all(process.popen.poll() == 0 for process in finishers):
                break
            if timeout is not None and time.monotonic() - started > timeout:
                raise ClusterError(f"the cluster did not finish within {timeout:.0f} s")
            if stall_timeout is not None and heartbeats is not None:
                stalled = _stalled(training, heartbeats, stall_timeout, time.monotonic() - started)
                if stalled:
                    raise ClusterError(stalled)
            time.sleep(0.2)
        for process in sidecar:  # It evaluates the last checkpoint, then stops by itself.
            try:
                code = process.popen.wait(timeout=EVALUATOR_GRACE_SECONDS)
            except subprocess.TimeoutExpired:
                code = None
            if code != 0:  # Evaluation on the side never fails the training.
                log.warning("train: the sidecar evaluator %s", "did not finish" if code is None else f"exited {code}")
    finally:
        _stop(processes)
        network.close()
        if bar is not None:
            bar.close()


def launch(
    spec: dict,
    *,
    spec_dir: Path,
    workers: int,
    parameter_servers: int = 0,
    devices: int | None = None,
    evaluator: bool = False,
    max_restarts: int = 0,
    timeout: float | None = None,
    sink=None,
    on_start=None,
) -> int:
    """Writes `spec` and runs the cluster, restarting it after a failure up to `max_restarts` times.

    Returns the number of restarts used; raises ClusterError when the last attempt fails.
    """
    strategy = spec["config"]["strategy"]
    spec_dir.mkdir(parents=True, exist_ok=True)
    spec_file = spec_dir / "train_spec.json"
    spec_file.write_text(json.dumps(spec, indent=2) + "\n")
    warm = claim(cluster_shape(strategy, workers, parameter_servers, devices, evaluator))
    for attempt in range(max_restarts + 1):
        try:
            run_cluster(
                spec_file,
                strategy=strategy,
                workers=workers,
                parameter_servers=parameter_servers,
                devices=devices,
                evaluator=evaluator,
                timeout=timeout,
                sink=sink,
                on_start=on_start if attempt == 0 else None,
                stall_timeout=spec["config"].get("stall_timeout"),
                heartbeats=Path(spec["working_dir"]) / HEARTBEATS if spec.get("working_dir") else None,
                warm=warm if attempt == 0 else None,
            )
            return attempt
        except ClusterError as error:
            if attempt == max_restarts:
                raise ClusterError(f"training cluster failed after {attempt} restart(s): {error}") from error
            log.warning(
                "train: %s; restarting the cluster from the last checkpoint (%d/%d)", error, attempt + 1, max_restarts
            )
    raise AssertionError("unreachable")
