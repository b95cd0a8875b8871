"""A training cluster's processes: each started in a process group of its own, which dies with its launcher, and
stopped as a group (its children too)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

from kflow.pipeline.dsl.process_signals import signal_group
from kflow.pipeline.dsl.scratch import remove_scratch_of


def spawn(command: list[str], env: dict[str, str], stdin=None) -> subprocess.Popen:
    """A cluster process: its output piped (relayed with its name), in its own process group (stopping it stops its
    children), killed with the launcher."""
    return subprocess.Popen(
        command,
        env=env,
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
    )


def _die_with_parent() -> None:
    """In the child before exec (Linux): get SIGKILL when the launcher dies, even by SIGKILL."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def stop(popens: list[subprocess.Popen], grace: float = 5.0) -> None:
    """SIGTERM every process group, wait `grace` seconds, then SIGKILL what is left."""
    _signal_running(popens, signal.SIGTERM)
    deadline = time.monotonic() + grace
    for popen in popens:
        try:
            popen.wait(timeout=max(deadline - time.monotonic(), 0.1))
        except subprocess.TimeoutExpired:
            pass
    _signal_running(popens, signal.SIGKILL)
    for popen in popens:
        popen.wait()
    remove_scratch_of([popen.pid for popen in popens])  # a process ended by signal left its own behind


def _signal_running(popens: list[subprocess.Popen], number: int) -> None:
    for popen in popens:
        if popen.poll() is None:
            signal_group(popen.pid, number)
