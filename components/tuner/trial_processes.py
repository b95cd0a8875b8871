"""The trial processes of a search: at most `parallel` at a time, each its own process group, all stopped when
the search ends however it ends (a failure, Ctrl-C, a cancelled run)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TRIAL_MODULE = "kflow.components.tuner.trial"


@dataclass
class TrialProcess:
    number: int
    folder: Path
    process: subprocess.Popen
    started: float

    def result(self) -> dict[str, Any]:
        """What the trial wrote, or a failed trial's record when it died before writing it."""
        written = self.folder / "result.json"
        if written.is_file():
            return json.loads(written.read_text())
        log = self.folder / "trial.log"
        tail = log.read_text(errors="replace").strip().splitlines()[-1:] if log.is_file() else []
        error = f"the trial's process exited {self.process.returncode}" + (f": {tail[0]}" if tail else "")
        return {"state": "failed", "error": error, "curve": [], "epochs": 0, "value": None, "last": None,
                "seconds": round(time.perf_counter() - self.started, 3)}  # fmt: skip


class TrialProcesses:
    """Starts trials (`start`), waits for the next to end (`next_ended`); leaving the block stops those left.

    `spares` processes are kept started ahead (trial.py `--warm`): each loads Python, TensorFlow and the Trainer
    while the running trials train, so that the next trial starts on a loaded process, not 4 s of imports later.
    """

    def __init__(self, spares: int = 1, parallel: int = 1) -> None:
        self.running: list[TrialProcess] = []
        self.spares_wanted = spares
        self.spares: list[subprocess.Popen] = []
        self.environment = thread_environment(parallel)

    def __enter__(self) -> TrialProcesses:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def start(self, number: int, folder: Path, spec: dict[str, Any], more: bool = True) -> None:
        """Starts trial `number` on a spare process where one is alive, else on a new one; `more`: trials may
        follow, so a spare is started ahead."""
        folder.mkdir(parents=True, exist_ok=True)
        spec_file = folder / "trial.json"
        spec_file.write_text(json.dumps(spec, indent=2, sort_keys=True) + "\n")
        process = None
        while self.spares and process is None:
            spare = self.spares.pop(0)
            try:
                spare.stdin.write(f"{spec_file}\n".encode())
                spare.stdin.close()
                process = spare
            except (BrokenPipeError, OSError):  # a spare that died (killed from outside): the next one, or a new one
                spare.wait()
        if process is None:
            with open(folder / "trial.log", "wb") as log:
                process = self._popen([str(spec_file)], stdin=subprocess.DEVNULL, stdout=log)
        self.running.append(TrialProcess(number, folder, process, time.perf_counter()))
        while more and len(self.spares) < self.spares_wanted:
            # Named by the search's folder in its command line, so that `ps` says whose spare it is.
            warm = ["--warm", str(folder.parent), spec["trainer_executor"]]
            self.spares.append(self._popen(warm, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL))

    def next_ended(self, poll: float = 0.1) -> TrialProcess:
        """Waits for a running trial to end and returns it."""
        while True:
            for trial in self.running:
                if trial.process.poll() is not None:
                    self.running.remove(trial)
                    return trial
            time.sleep(poll)

    def stop(self, grace: float = 5.0) -> None:
        """Stops every trial still running and every spare: SIGTERM to its group, SIGKILL after `grace` seconds."""
        processes = [trial.process for trial in self.running] + self.spares
        for process in processes:
            _signal_group(process, signal.SIGTERM)
        deadline = time.monotonic() + grace
        for process in processes:
            try:
                process.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _signal_group(process, signal.SIGKILL)
                process.wait()
            if process.stdin is not None:
                process.stdin.close()
        self.running.clear()
        self.spares.clear()

    def _popen(self, arguments: list[str], **streams: Any) -> subprocess.Popen:
        return subprocess.Popen(
            [sys.executable, "-m", TRIAL_MODULE, *arguments],
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own group: stopped whole, TensorFlow's threads and children too
            env={**os.environ, "PYTHONUNBUFFERED": "1", **self.environment},
            **streams,
        )


def thread_environment(parallel: int) -> dict[str, str]:
    """TensorFlow's and oneDNN's thread counts for one of `parallel` trials: this process's cores shared out
    (each trial's ops on 2 threads of 2 cores, twice, oversubscribe them); {} for one trial at a time, or where
    the environment sets them."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if parallel <= 1 or any(name in os.environ for name in _THREAD_VARIABLES):
        return {}
    share = str(max(1, cores // parallel))
    return {"TF_NUM_INTRAOP_THREADS": share, "TF_NUM_INTEROP_THREADS": share, "OMP_NUM_THREADS": share}


_THREAD_VARIABLES = ("TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS", "OMP_NUM_THREADS")


def _signal_group(process: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(process.pid, sig)
    except ProcessLookupError:
        pass
