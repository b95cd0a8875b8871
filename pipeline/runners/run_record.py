"""`run.json`: the record of one pipeline run, rewritten atomically after every change.

    {"pipeline": "mnist", "run_id": "20261123-101500-3f2a", "status": "running" | "succeeded" | "failed",
     "started_at": ..., "finished_at": ..., "seconds": 12.3, "metadata": {...},
     "components": {"ingest": {"status": "succeeded" | "cached" | "failed" | "running",
                               "seconds": ..., "parameters": {...}, "fingerprint": "...",
                               "inputs": {name: {"type", "uri", "fingerprint"}}, "outputs": {...},
                               "summary": {...}, "cached_from": run_id, "error": "..."}}}

Several components may finish at once (parallel branches), so updates hold an
exclusive file lock while they read, change and replace the file.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import json
import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

RUN_FILE = "run.json"


def new_run_id() -> str:
    return dt.datetime.now().strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(2)


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


class RunRecord:
    """Reads and updates `<run_dir>/run.json`."""

    def __init__(self, run_dir: str | Path):
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / RUN_FILE

    @classmethod
    def create(cls, run_dir: Path, pipeline: str, run_id: str, metadata: dict[str, Any]) -> RunRecord:
        record = cls(run_dir)
        run_dir.mkdir(parents=True, exist_ok=False)
        record._write(
            {
                "pipeline": pipeline,
                "run_id": run_id,
                "status": "running",
                "started_at": _now(),
                "metadata": metadata,
                "components": {},
            }
        )
        return record

    def load(self) -> dict[str, Any]:
        return json.loads(self.path.read_text())

    def set_component(self, node_id: str, **fields: Any) -> None:
        with self._locked() as data:
            data["components"].setdefault(node_id, {}).update(fields)

    def finish(self, status: str, seconds: float) -> None:
        with self._locked() as data:
            data.update(status=status, finished_at=_now(), seconds=round(seconds, 3))
            for entry in data["components"].values():
                if entry.get("status") == "running":  # Interrupted before it could say so itself.
                    entry["status"] = status

    @contextmanager
    def _locked(self) -> Iterator[dict[str, Any]]:
        with open(self.path.with_suffix(".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            data = self.load()
            yield data
            self._write(data)

    def _write(self, data: dict[str, Any]) -> None:
        temporary = self.path.with_suffix(f".tmp{os.getpid()}")
        temporary.write_text(json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")
        os.replace(temporary, self.path)


def earlier_runs(pipeline_dir: Path) -> Iterator[dict[str, Any]]:
    """The records of the runs under `pipeline_dir`, newest first; unreadable ones are skipped."""
    for run_file in sorted(pipeline_dir.glob(f"*/{RUN_FILE}"), reverse=True):
        try:
            data = json.loads(run_file.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        data["run_dir"] = str(run_file.parent)
        yield data
