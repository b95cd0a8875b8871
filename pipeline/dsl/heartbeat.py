"""Heartbeats of a training cluster's processes, and the watchdog that ends a cluster which stopped training.

A cluster whose replicas wait on each other (a collective, a parameter server) hangs for good when one
of them stops: killed without its peers noticing, cut off the network, stopped. Every process that
trains therefore beats: each finished train step and each evaluation batch (`beat`, called by the
training loops through the progress) rewrites `<folder>/<replica>` with its step, at most once a
second. A cluster is stalled when no beat came for `trainer.stall_timeout` seconds:

- a local cluster's launcher watches the files (`last_beats`) and stops the cluster, naming the
  processes that stopped (components/trainer/launcher.py);
- a process of a cluster job (a pod, no launcher beside it) watches its own beats
  (`Heartbeat(watch=True)`): when it stalls it writes `<folder>/stall.json` (every replica's last beat),
  prints its threads' Python stacks and exits with `STALLED_EXIT`; the pod fails, the job restarts from
  its last checkpoint or fails, and the job launcher quotes the report.

The first beat comes after the first step, which also compiles the model: the watch counts from the
process's start, so `stall_timeout` must cover the start-up and the first step (docs/training.md: measured).
"""

from __future__ import annotations

import faulthandler
import json
import logging
import os
import sys
import threading
import time
from pathlib import Path

log = logging.getLogger("kflow")

STALLED_EXIT = 75  # EX_TEMPFAIL: the cluster may well train after a restart
HEARTBEATS = "heartbeats"  # the folder of a cluster's working dir where its training processes beat
REPORT = "stall.json"


class Heartbeat:
    def __init__(self, folder: Path, replica: str, stall_timeout: float, watch: bool = False) -> None:
        self.folder, self.replica, self.stall_timeout = Path(folder), replica, stall_timeout
        self.folder.mkdir(parents=True, exist_ok=True)
        self.path = self.folder / replica
        self.started = self.last = time.monotonic()
        self.written = 0.0
        self.step = 0
        self.longest = 0.0  # the longest wait between beats, the first one included
        self.first: float | None = None
        self.stopped = threading.Event()
        self._write()
        if watch:
            threading.Thread(target=self._watch, name="kflow-stall-watchdog", daemon=True).start()

    def beat(self, step: int | None = None) -> None:
        now = time.monotonic()
        self.longest = max(self.longest, now - self.last)
        if self.first is None:
            self.first = now - self.started
        self.last = now
        if step is not None:
            self.step = step
        if now - self.written >= 1.0:
            self._write()

    def _write(self) -> None:
        self.written = time.monotonic()
        temporary = self.path.with_suffix(".tmp")
        temporary.write_text(f"{self.step}\n")
        os.replace(temporary, self.path)

    def _watch(self) -> None:
        period = min(5.0, max(self.stall_timeout / 10, 0.2))
        while not self.stopped.wait(period):
            waited = time.monotonic() - self.last
            if waited > self.stall_timeout:
                self._report(waited)
                os._exit(STALLED_EXIT)  # The main thread is stuck in native code: nothing else would end it.

    def _report(self, waited: float) -> None:
        self._write()  # the last step this process finished, which the once-a-second writes may not hold yet
        beats = last_beats(self.folder)
        report = {"replica": self.replica, "waited_seconds": round(waited, 1), "beats": beats}
        (self.folder / REPORT).write_text(json.dumps(report, indent=2) + "\n")
        print(f"kflow: {stall_line(self.replica, waited, beats)}; its threads:", file=sys.stderr, flush=True)
        faulthandler.dump_traceback(file=sys.stderr, all_threads=True)

    def close(self) -> None:
        self.stopped.set()
        if self.first is not None:
            log.info(
                "train: the longest wait between steps was %.1f s (the first step, with compiling: %.1f s)",
                self.longest,
                self.first,
            )


def last_beats(folder: Path) -> dict[str, dict[str, float]]:
    """{replica: {"step", "seconds_ago"}} of every heartbeat file in `folder`."""
    now, beats = time.time(), {}
    for path in sorted(Path(folder).glob("*")):
        if path.suffix or path.name == REPORT:
            continue
        try:
            step = int(path.read_text().strip() or 0)
            beats[path.name] = {"step": step, "seconds_ago": round(now - path.stat().st_mtime, 1)}
        except (OSError, ValueError):
            continue
    return beats


def beats_line(beats: dict[str, dict[str, float]]) -> str:
    """`last steps: worker-0 at step 78 (15 s ago), ...`"""
    shown = ", ".join(f"{name} at step {b['step']} ({b['seconds_ago']:.0f} s ago)" for name, b in beats.items())
    return f"last steps: {shown or 'none'}"


def stall_line(replica: str, waited: float, beats: dict[str, dict[str, float]]) -> str:
    return f"{replica} finished no training step for {waited:.0f} s; {beats_line(beats)}"


_current: Heartbeat | None = None


def start(folder: Path, replica: str, stall_timeout: float, watch: bool) -> Heartbeat:
    global _current
    _current = Heartbeat(folder, replica, stall_timeout, watch)
    return _current


def stop() -> None:
    global _current
    if _current is not None:
        _current.close()
        _current = None


def beat(step: int | None = None) -> None:
    """A finished train step (or evaluation batch) of this process, if it runs a heartbeat."""
    if _current is not None:
        _current.beat(step)
