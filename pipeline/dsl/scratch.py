"""Temporary folders that say whose they are: `<tmp>/kflow-<what>-<pid>-<random>`.

A process killed outright (SIGKILL, the OOM killer) leaves its temporary folders behind; the pid in the name
lets `kflow gc` tell the ones of dead processes from those still in use.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

_OWNED = re.compile(r"^kflow-[a-z]+-(\d+)-")


def scratch_dir(what: str) -> str:
    """A new temporary folder `kflow-<what>-<this pid>-…` (`what`: letters only)."""
    return tempfile.mkdtemp(prefix=f"kflow-{what}-{os.getpid()}-")


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
