"""Copies that take folders and regular files only, never following a link: the job launcher's copies of a task's
inputs onto the shared volume and of the writer replica's outputs back. A replica holds no Kubernetes credentials,
and a `token.txt -> <a path only the launcher's pod has>` among its outputs must not make the launcher upload that
file; a FIFO must not hang it.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
from pathlib import Path


class UnsafeTree(ValueError):
    """A tree to copy holds what the launcher does not copy (a link, a FIFO, a device): one line naming it."""


def _refuse(path: Path, mode: int, what: str) -> UnsafeTree:
    kind = "a symbolic link" if stat.S_ISLNK(mode) else "not a regular file or folder"
    return UnsafeTree(f"{what}: {path} is {kind}; only regular files and folders are copied (links are not followed)")


def copy_plain_tree(source: Path, target: Path, what: str, within: Path | None = None) -> None:
    """Copies the folder `source` to `target` (which may exist), folders and regular files only, never following a
    link: UnsafeTree names the first link or other file found. `within`: a folder above `source` from which no
    step down to it may be a link either (a replica could replace `outputs/worker-0` itself with one)."""
    if within is not None:
        step = within
        for part in source.relative_to(within).parts:
            step = step / part
            mode = os.lstat(step).st_mode
            if not stat.S_ISDIR(mode):
                raise _refuse(step, mode, what)
    mode = os.lstat(source).st_mode
    if not stat.S_ISDIR(mode):
        raise _refuse(source, mode, what)
    target.mkdir(parents=True, exist_ok=True)
    for folder, folders, files in os.walk(source):  # followlinks=False: a link to a folder is listed, not entered
        here = Path(folder)
        into = target / here.relative_to(source)
        for name in sorted(folders):
            mode = os.lstat(here / name).st_mode
            if not stat.S_ISDIR(mode):
                raise _refuse(here / name, mode, what)
            (into / name).mkdir(exist_ok=True)
        for name in sorted(files):
            _copy_plain_file(here / name, into / name, what)


def _copy_plain_file(source: Path, target: Path, what: str) -> None:
    # O_NOFOLLOW: a file swapped for a link after the walk listed it is refused, not followed; O_NONBLOCK: a FIFO
    # is not waited on; fstat then says what was opened.
    try:
        handle = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise _refuse(source, stat.S_IFLNK, what) from None
        raise
    with os.fdopen(handle, "rb") as reader:
        found = os.fstat(reader.fileno())
        if not stat.S_ISREG(found.st_mode):
            raise _refuse(source, found.st_mode, what)
        with open(target, "wb") as writer:
            shutil.copyfileobj(reader, writer)
    os.chmod(target, stat.S_IMODE(found.st_mode))
    os.utime(target, ns=(found.st_atime_ns, found.st_mtime_ns))
