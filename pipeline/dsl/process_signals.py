"""Signalling a process group that may already be gone."""

from __future__ import annotations

import contextlib
import os


def signal_group(pid: int, number: int) -> None:
    """Sends signal `number` to the process group led by `pid`; a group already gone is no error. A process may end
    between a `poll` that saw it running and the signal, and be reaped by a thread waiting on it: the stand-in
    Kubernetes' stop raised there, in its controller's thread, and left its job without an end."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, number)
