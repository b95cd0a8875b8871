"""The epochs a training has finished, kept beside its checkpoints so that a resumed run's history has them too.

A training stopped (Ctrl-C, a killed pod) and run again resumes from its newest checkpoint and trains only the
epochs after it: its history.json held those alone, and one resumed after its last epoch held none (`kflow show`'s
train row without loss or accuracy, no metric for a tuner's trial or MLflow). Each finished epoch's line is appended
to `<working_dir>/epochs.jsonl` as it ends; a resumed run takes those of the steps its checkpoint holds (an epoch
logged but not yet saved is trained again, and logged again).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

FILE = "epochs.jsonl"


class EpochJournal:
    """`earlier`: the epochs a checkpoint at `start_step` holds (none without one); `add` keeps one more. Only the
    process that writes the checkpoints (`writes`) writes it; the others read the same epochs."""

    def __init__(self, working_dir: Path | None, start_step: int, writes: bool):
        self.path = Path(working_dir) / FILE if working_dir is not None else None
        self.writes = writes and self.path is not None
        self.earlier = _read(self.path, start_step) if self.path is not None and start_step else []
        if self.writes:  # what a later run would resume past is dropped: it will be trained, and logged, again
            self.path.parent.mkdir(parents=True, exist_ok=True)
            partial = self.path.with_name(f".{FILE}.{os.getpid()}")
            partial.write_text("".join(json.dumps(epoch) + "\n" for epoch in self.earlier))
            os.replace(partial, self.path)

    def add(self, epoch: dict[str, Any]) -> None:
        if not self.writes:
            return
        with self.path.open("a") as journal:
            journal.write(json.dumps(epoch) + "\n")
            journal.flush()
            os.fsync(journal.fileno())


def _read(path: Path, start_step: int) -> list[dict[str, Any]]:
    """The epochs up to `start_step`, in order, one a number (a line torn by a kill is skipped)."""
    epochs: dict[int, dict[str, Any]] = {}
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return []
    for line in lines:
        try:
            epoch = json.loads(line)
        except ValueError:
            continue
        if isinstance(epoch, dict) and isinstance(epoch.get("epoch"), int) and epoch.get("step", 0) <= start_step:
            epochs[epoch["epoch"]] = epoch
    return [epochs[number] for number in sorted(epochs)]
