"""Files that survive a crash or a power loss whole, and that a planted link cannot redirect.

A rename publishes atomically only once what it names is on disk: without fsync, after a power loss a
renamed file can be there with its size and zeros for content. So a publish syncs the files, then their
folders, renames, then syncs the folder holding the new name (`fsync_tree`, `write_atomically`).

Files kflow creates at fixed or guessable names under a shared root (locks, temporaries) are opened with
O_NOFOLLOW and, for new temporaries, O_EXCL: a symlink planted at that name fails the open instead of
making kflow write through it.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path


def fsync_path(path: Path) -> None:
    """Syncs one file or folder (a folder's sync makes the names in it durable)."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | (os.O_DIRECTORY if path.is_dir() else 0)
    descriptor = os.open(path, flags)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def fsync_tree(folder: Path) -> None:
    """Syncs every file and folder under `folder`, and `folder` itself (deepest first)."""
    for current, _, files in os.walk(folder, topdown=False):
        for name in files:
            path = Path(current) / name
            if not path.is_symlink():
                fsync_path(path)
        fsync_path(Path(current))


def write_atomically(path: Path, data: str | bytes, *, durable: bool = True) -> None:
    """Replaces `path` with `data` whole: a new file beside it (O_EXCL | O_NOFOLLOW), synced, renamed over
    it, its folder synced. On any error (ENOSPC, EIO) the old file is intact and the new one removed."""
    payload = data.encode() if isinstance(data, str) else data
    temporary = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
    try:
        try:
            view = memoryview(payload)
            while view:
                view = view[os.write(descriptor, view) :]
            if durable:
                os.fsync(descriptor)
        finally:
            os.close(descriptor)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    if durable:
        fsync_path(path.parent)


def open_lock(path: Path):
    """A lock file for fcntl.flock, opened for reading and writing without truncating it or following a
    link planted at its name; created 0600 (only its owner needs to open it)."""
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    return os.fdopen(descriptor, "r+")
