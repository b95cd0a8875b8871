"""Temporary folders that say whose they are: `<tmp>/kflow-<what>-<pid>-<random>`.

A process killed outright (SIGKILL, the OOM killer) leaves its temporary folders behind; the pid in the name
lets `kflow gc` tell the ones of dead processes from those still in use. One that ends otherwise (Ctrl-C: `kflow`
exits at once, without the `finally` of the threads that made them) removes those it made and still holds at exit.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import tempfile
from pathlib import Path

_OWNED = re.compile(r"^kflow-[a-z]+-(\d+)-")
_MADE: set[str] = set()  # this process's scratch folders; a forked child inherits the set, not the folders


def scratch_dir(what: str) -> str:
    """A new temporary folder `kflow-<what>-<this pid>-…` (`what`: letters only), removed at the process's exit at
    the latest."""
    path = tempfile.mkdtemp(prefix=f"kflow-{what}-{os.getpid()}-")
    _MADE.add(path)
    return path


@atexit.register
def _remove_made() -> None:
    for path in list(_MADE):
        if owner(path) == os.getpid():
            shutil.rmtree(path, ignore_errors=True)


def remove_scratch_of(pids: list[int]) -> int:
    """Removes the scratch folders of processes that have ended (a training cluster's, stopped by signal: a process
    killed gets no exit of its own to remove them); returns how many there were."""
    removed = 0
    for pid in pids:
        for path in Path(tempfile.gettempdir()).glob(f"kflow-*-{pid}-*"):
            if owner(path) == pid and path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
                removed += 1
    return removed


def owner(path: str | Path) -> int | None:
    """The pid in a scratch folder's name, or None for a name without one."""
    match = _OWNED.match(Path(path).name)
    return int(match.group(1)) if match else None


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's, and alive
        return True
    return True
