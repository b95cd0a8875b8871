"""The trial processes of a search: at most `parallel` workers, each its own process group, running one trial
after another, all stopped when the search ends however it ends (a failure, Ctrl-C, a cancelled run)."""

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

from kflow.pipeline.dsl.process_signals import signal_group

TRIAL_MODULE = "kflow.components.tuner.trial"


@dataclass
class TrialProcess:
    """A running trial: its number, its folder and the worker process training it."""

    number: int
    folder: Path
    process: subprocess.Popen
    started: float

    def ended(self) -> bool:
        return (self.folder / "result.json").is_file() or self.process.poll() is not None

    def result(self) -> dict[str, Any]:
        """What the trial wrote, or a failed trial's record when its worker died before writing it."""
        written = self.folder / "result.json"
        if written.is_file():
            return json.loads(written.read_text())
        log = self.folder / "trial.log"
        tail = log.read_text(errors="replace").strip().splitlines()[-1:] if log.is_file() else []
        error = f"the trial's process exited {self.process.returncode}" + (f": {tail[0]}" if tail else "")
        return {"state": "failed", "error": error, "curve": [], "epochs": 0, "value": None, "last": None,
                "seconds": round(time.perf_counter() - self.started, 3)}  # fmt: skip


class TrialProcesses:
    """Starts trials (`start`), waits for the next to end (`next_ended`); leaving the block stops every worker.

    Trials run in worker processes (trial.py `--worker`), at most `parallel` of them, each loading Python,
    TensorFlow and the Trainer once and then training one trial after another: a trial costs its training, not a
    process start and its imports. A worker that dies (a crash, killed from outside) fails its trial only; the
    next trial gets a new worker. A worker is replaced after `TRIALS_PER_WORKER` trials, to bound what a long
    search could leave in one process's memory.
    """

    TRIALS_PER_WORKER = 25

    def __init__(self, parallel: int = 1) -> None:
        self.running: list[TrialProcess] = []
        self.idle: list[subprocess.Popen] = []
        self.served: dict[int, int] = {}  # worker pid: trials it was given
        self.environment = thread_environment(parallel)

    def __enter__(self) -> TrialProcesses:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def start(self, number: int, folder: Path, spec: dict[str, Any]) -> None:
        """Starts trial `number` on an idle worker that is alive, else on a new one."""
        folder.mkdir(parents=True, exist_ok=True)
        spec_file = folder / "trial.json"
        spec_file.write_text(json.dumps(spec, indent=2, sort_keys=True) + "\n")
        worker = None
        while self.idle and worker is None:
            candidate = self.idle.pop(0)
            try:
                candidate.stdin.write(f"{spec_file}\n".encode())
                candidate.stdin.flush()
                worker = candidate
            except (BrokenPipeError, OSError):  # died while idle (killed from outside): the next, or a new one
                self._end(candidate)
        if worker is None:
            # Named by the search's folder in its command line too, so that `ps` says whose worker it is.
            worker = subprocess.Popen(
                [sys.executable, "-m", TRIAL_MODULE, "--worker", spec["trainer_executor"], str(folder.parent)],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,  # each trial's output goes to its own log (trial.py)
                start_new_session=True,  # its own group: stopped whole, TensorFlow's threads and children too
                env={**os.environ, "PYTHONUNBUFFERED": "1", **self.environment},
            )
            worker.stdin.write(f"{spec_file}\n".encode())
            worker.stdin.flush()
        self.served[worker.pid] = self.served.get(worker.pid, 0) + 1
        self.running.append(TrialProcess(number, folder, worker, time.perf_counter()))

    def next_ended(self, poll: float = 0.05) -> TrialProcess:
        """Waits for a running trial to end and returns it; its worker is idle again (or ended, if it died)."""
        while True:
            for trial in self.running:
                if trial.ended():
                    self.running.remove(trial)
                    worker = trial.process
                    if worker.poll() is None and self.served[worker.pid] < self.TRIALS_PER_WORKER:
                        self.idle.append(worker)
                    else:
                        self._end(worker)
                    return trial
            time.sleep(poll)

    def stop(self, grace: float = 5.0) -> None:
        """Stops every worker, busy or idle: SIGTERM to its group, SIGKILL after `grace` seconds."""
        processes = [trial.process for trial in self.running] + self.idle
        for process in processes:
            signal_group(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        for process in processes:
            self._end(process, max(0.0, deadline - time.monotonic()))
        self.running.clear()
        self.idle.clear()

    @staticmethod
    def _end(process: subprocess.Popen, grace: float = 5.0) -> None:
        """Closes a worker's stdin (its end, when idle) and waits for it; SIGKILL to its group after `grace`."""
        try:
            process.stdin.close()
        except OSError:
            pass
        try:
            process.wait(grace)
        except subprocess.TimeoutExpired:
            signal_group(process.pid, signal.SIGKILL)
            process.wait()


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
