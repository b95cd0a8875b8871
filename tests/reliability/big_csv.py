"""A CSV big enough for a real ingest's Beam stage to take seconds and to fill a small disk: scikit-learn's bundled
diabetes data (442 patients) repeated, and a `kflow run` of it as a subprocess whose log lines can be waited for."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import yaml

from tests.components.datasets.tabular_fixtures import write_diabetes
from tests.conftest import REPO


def big_csv_config(folder: Path, repeats: int) -> Path:
    """A config ingesting the diabetes data `repeats` times over (21 KB a repeat) as a regression on progression."""
    rows = write_diabetes(folder / "diabetes.csv").read_text().splitlines()
    source = folder / "big.csv"
    source.write_text("\n".join([rows[0], *rows[1:] * repeats]) + "\n")
    config = {
        "name": "big",
        "data": {
            "dataset": "csv",
            "source": {"path": str(source)},
            "label": "progression",
            "problem_type": "regression",
            "split": {"train": 8, "eval": 1, "test": 1},
            "shards_per_split": 1,
        },
        "trainer": {"model": "tabular_mlp", "epochs": 1},
    }
    path = folder / "big.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


class KflowRun:
    """`kflow COMMAND CONFIG --pipeline-root ROOT ARGS…` (`run` unless told) in a subprocess, its stderr lines
    collected as they come."""

    def __init__(
        self, config: Path, root: Path, *args: str, env: dict | None = None, command_name: str = "run", **popen
    ):
        command = [sys.executable, "-m", "kflow.pipeline.cli.main", command_name, str(config)]
        command += ["--pipeline-root", str(root)]
        self.process = subprocess.Popen(
            [*command, *args], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, **popen
        )
        self.lines: list[str] = []
        self.stdout = ""
        self._threads = [threading.Thread(target=self._read, daemon=True), threading.Thread(target=self._out)]
        for thread in self._threads:
            thread.start()

    def _read(self) -> None:
        for line in self.process.stderr:
            self.lines.append(line)

    def _out(self) -> None:
        self.stdout = self.process.stdout.read()

    def wait_for_line(self, text: str, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.process.poll() is None:
            if any(text in line for line in list(self.lines)):
                return True
            time.sleep(0.05)
        return any(text in line for line in list(self.lines))

    def wait(self, timeout: float) -> int:
        code = self.process.wait(timeout=timeout)
        for thread in self._threads:
            thread.join(timeout=10)
        return code

    @property
    def stderr(self) -> str:
        return "".join(self.lines)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
