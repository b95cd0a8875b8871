"""A pod played as a local process: its container's command with its environment, its log lines, its phase, and
the kubelet's stop (SIGTERM, then SIGKILL). The stand-in Kubernetes server (stand_in_kube.py) starts these by
default; tests/pipeline/kubeflow/hosts.py starts each in a network namespace of its own."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from datetime import UTC, datetime

from kflow.pipeline.dsl.process_signals import signal_group
from kflow.pipeline.rehearsal.stand_in_trainer import Pod, pod_phase


def timestamp() -> str:
    """Now, as Kubernetes writes a time (a log line's, an object's creationTimestamp)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LocalPod:
    """A pod as a local process: its container's command, with its environment, in the current folder.

    `spawn` starts it (default: here; the hosts harness starts it in the pod's network namespace) and
    `on_stop` runs once it has ended (the harness removes the pod's host)."""

    def __init__(
        self,
        pod: Pod,
        spawn: Callable[..., subprocess.Popen] = subprocess.Popen,
        on_stop: Callable[[], None] | None = None,
    ) -> None:
        self.pod = pod
        self.on_stop = on_stop
        self.lines: list[tuple[str, str]] = []
        self.exit_code: int | None = None
        self.stopped = False
        container = pod.spec["containers"][0]
        command = [*container.get("command", []), *container.get("args", [])]
        command = [sys.executable if part == "python" else part for part in command]
        environment = {**os.environ, **pod.environment()}
        environment.pop("KUBECONFIG", None)
        self.process = spawn(
            command,
            env=environment,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.append((timestamp(), line.rstrip("\n")))
        code = self.process.wait()
        self.exit_code = 128 - code if code < 0 else code  # as a container runtime reports a signal: 137 for SIGKILL

    @property
    def phase(self) -> str:
        return pod_phase(self.exit_code, self.stopped)

    def stop(self) -> None:
        """As the kubelet deletes a pod: SIGTERM to its processes, SIGKILL after a grace period."""
        if self.process.poll() is None:
            self.stopped = True
            signal_group(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                signal_group(self.process.pid, signal.SIGKILL)
        self.reader.join(timeout=10)
        if self.on_stop is not None:
            self.on_stop()
            self.on_stop = None


def local_pods(pods: list[Pod]) -> list[LocalPod]:
    return [LocalPod(pod) for pod in pods]
