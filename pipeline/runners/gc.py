"""`kflow gc`: removes what no run needs, and old runs by a keep policy, never anything a live run uses.

    kflow gc [PIPELINE_DIR | PIPELINE_ROOT] [--dry-run] [--keep-last N] [--keep-blessed]

Stale, always removed:
- `<run>/.staging/` of a run that is not live (a crash or a kill left an unpublished output there);
- `<tmp>/kflow-<what>-<pid>-…` scratch folders whose process is dead (decompressed sources, staged chunks,
  a trainer's temporary working dir);
- `<pipeline>/.work/<node>-<fingerprint>/` (checkpoints to resume from) once an execution with that
  fingerprint has finished, unless a live run is at it;
- `<pipeline>/.locks/*.lock` no process holds, untouched for a day (taking a lock touches it: one in use is
  never a day untouched). gc removes a lock only while holding it itself, and a run that waited on a file gc
  removed takes the one at the path again (`cache.held_lock`), so no two runs ever hold it at once.
With `--keep-last N`, the runs but the newest N are removed too (`--keep-blessed` keeps those that blessed a
model), except a live run and a run whose outputs a kept run reuses (its cached executions point there) or names
(a baseline model its evaluation compared with, a model it warm-started from).

A run is live when its record says `running` and its process (`host`, `pid` in run.json) is alive on this host.
`kflow run` sweeps its own pipeline's stale staging when it starts.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import socket
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kflow.pipeline.dsl.artifacts import ModelBlessing
from kflow.pipeline.dsl.durable import open_lock
from kflow.pipeline.dsl.scratch import alive, owner
from kflow.pipeline.runners.cache import LOCKS, names_file
from kflow.pipeline.runners.node_runner import STAGING, WORK
from kflow.pipeline.runners.run_record import RUN_FILE, Run, earlier_runs

log = logging.getLogger("kflow")

LOCK_AGE_SECONDS = 86400


@dataclass(frozen=True)
class Stale:
    path: Path
    why: str


def live(run: Run) -> bool:
    if run.status != "running":
        return False
    if run.pid is None:  # a record from before pids: it may run; leave it alone
        return True
    return run.host not in (None, socket.gethostname()) or alive(run.pid)


def pipeline_dirs(path: Path) -> list[Path]:
    """`path` itself when it holds runs, else its folders that do (a pipeline root)."""
    if any(path.glob(f"*/{RUN_FILE}")):
        return [path]
    return sorted(folder for folder in path.iterdir() if folder.is_dir() and any(folder.glob(f"*/{RUN_FILE}")))


def stale_items(path: Path, keep_last: int | None = None, keep_blessed: bool = False) -> list[Stale]:
    found: list[Stale] = []
    for pipeline_dir in pipeline_dirs(Path(path)):
        runs = list(earlier_runs(pipeline_dir))
        live_runs = [run for run in runs if live(run)]
        found += _stale_staging(runs, live_runs)
        finished = {(node, e.fingerprint) for run in runs for node, e in run.executions.items() if e.finished}
        in_use = {(node, e.fingerprint) for run in live_runs for node, e in run.executions.items()}
        for work in sorted((pipeline_dir / WORK).glob("*")):
            node, _, fingerprint = work.name.rpartition("-")
            if (node, fingerprint) in finished and (node, fingerprint) not in in_use:
                found.append(Stale(work, f"checkpoints of {node}, which has finished"))
        found += _unheld_locks(pipeline_dir / LOCKS)
        if keep_last is not None:
            found += _old_runs(runs, live_runs, keep_last, keep_blessed)
    return found + stale_scratch()


def _stale_staging(runs: list[Run], live_runs: list[Run]) -> list[Stale]:
    return [
        Stale(run.run_dir / STAGING, f"unpublished outputs of run {run.run_id} ({run.status})")
        for run in runs
        if run not in live_runs and (run.run_dir / STAGING).is_dir() and any((run.run_dir / STAGING).iterdir())
    ]


def stale_scratch(folder: Path | None = None) -> list[Stale]:
    """Scratch folders of processes that are dead."""
    folder = Path(folder or tempfile.gettempdir())
    return [
        Stale(path, f"scratch of process {pid}, which is gone")
        for path in sorted(folder.glob("kflow-*"))
        if path.is_dir() and (pid := owner(path)) is not None and not alive(pid)
    ]


def _unheld_locks(folder: Path) -> list[Stale]:
    found = []
    for lock in sorted(folder.glob("*.lock")):
        if not _idle(lock):
            continue
        with open_lock(lock) as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue
            fcntl.flock(handle, fcntl.LOCK_UN)
        found.append(Stale(lock, "a lock no process holds"))
    return found


def _idle(lock: Path | int) -> bool:
    """Untouched for LOCK_AGE_SECONDS: every taker touches it (`held_lock`)."""
    return time.time() - os.stat(lock).st_mtime >= LOCK_AGE_SECONDS


# Called between taking a lock and unlinking it: lets a test force a run to be waiting on that very file.
_before_unlink: Callable[[Path], None] | None = None


def remove_lock(lock: Path) -> str | None:
    """Removes a lock file that no one holds and that is still idle, while holding it: a run that took it since
    gc listed it keeps it (and touched it); one waiting on it finds the path gone and takes a new one
    (`cache.held_lock`). None when removed (or gone already), else why it was kept."""
    try:
        descriptor = os.open(lock, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)  # never creates one
    except FileNotFoundError:
        return None
    except OSError as error:  # a link planted at its name: not a lock of ours to take
        return error.strerror or str(error)
    with os.fdopen(descriptor, "r+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return "a run took it since it was listed"
        if not names_file(lock, handle.fileno()) or not _idle(handle.fileno()):
            return "a run used it since it was listed"
        if _before_unlink is not None:
            _before_unlink(lock)
        lock.unlink()
        return None


def _old_runs(runs: list[Run], live_runs: list[Run], keep_last: int, keep_blessed: bool) -> list[Stale]:
    kept = list(runs[:keep_last]) + [run for run in runs[keep_last:] if run in live_runs]
    if keep_blessed:
        kept += [run for run in runs[keep_last:] if _blessed(run) and run not in kept]
    used = {e.cached_from for run in kept for e in run.executions.values() if e.cached_from}
    named = {text for run in kept for e in run.executions.values() for text in _strings([e.parameters, e.summary])}
    return [
        Stale(run.run_dir, f"run {run.run_id}, older than the newest {keep_last}")
        for run in runs[keep_last:]
        if run not in kept and run.run_id not in used and not any(_inside(text, run.run_id) for text in named)
    ]


def _strings(value: object) -> list[str]:
    """The strings in a run record's values, however nested."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for item in value.values() for text in _strings(item)]
    if isinstance(value, list | tuple):
        return [text for item in value for text in _strings(item)]
    return []


def _inside(text: str, run_id: str) -> bool:
    """Whether `text` is a path into the run `run_id`'s folder: a kept run's baseline model (evaluate's
    baseline_model_uri) or warm start, which it names as a parameter rather than reusing it as a cached output."""
    return f"/{run_id}/" in text or text.endswith(f"/{run_id}") or text.startswith(f"{run_id}/")


def _blessed(run: Run) -> bool:
    return any(blessing.blessed for e in run.executions.values() for blessing in e.outputs_of_type(ModelBlessing))


def remove(items: list[Stale]) -> None:
    for item in items:
        if item.path.parent.name == LOCKS and item.path.suffix == ".lock":
            if kept := remove_lock(item.path):
                log.info("kept %s: %s", item.path, kept)
        elif item.path.is_dir():
            shutil.rmtree(item.path, ignore_errors=True)
        else:
            item.path.unlink(missing_ok=True)


def sweep_staging(pipeline_dir: Path) -> int:
    """What `kflow run` does first: the unpublished outputs of this pipeline's runs that are not live."""
    runs = list(earlier_runs(pipeline_dir)) if pipeline_dir.is_dir() else []
    items = _stale_staging(runs, [run for run in runs if live(run)])
    remove(items)
    return len(items)
