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
    """Starts trials (`start`), waits for the next to end (`next_ended`); leaving the block stops those left."""

    def __init__(self) -> None:
        self.running: list[TrialProcess] = []

    def __enter__(self) -> TrialProcesses:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def start(self, number: int, folder: Path, spec: dict[str, Any]) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        spec_file = folder / "trial.json"
        spec_file.write_text(json.dumps(spec, indent=2, sort_keys=True) + "\n")
        with open(folder / "trial.log", "wb") as log:
            process = subprocess.Popen(
                [sys.executable, "-m", TRIAL_MODULE, str(spec_file)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own group: stopped whole, TensorFlow's threads and children too
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        self.running.append(TrialProcess(number, folder, process, time.perf_counter()))

    def next_ended(self, poll: float = 0.1) -> TrialProcess:
        """Waits for a running trial to end and returns it."""
        while True:
            for trial in self.running:
                if trial.process.poll() is not None:
                    self.running.remove(trial)
                    return trial
            time.sleep(poll)

    def stop(self, grace: float = 5.0) -> None:
        """Stops every trial still running: SIGTERM to its group, SIGKILL after `grace` seconds."""
        for trial in self.running:
            _signal_group(trial.process, signal.SIGTERM)
        deadline = time.monotonic() + grace
        for trial in self.running:
            try:
                trial.process.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _signal_group(trial.process, signal.SIGKILL)
                trial.process.wait()
        self.running.clear()


def _signal_group(process: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(process.pid, sig)
    except ProcessLookupError:
        pass
