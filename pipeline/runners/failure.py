"""A component's failure said in one line, with its details in a file beside the run.

Beam re-raises what failed in a worker thread or process as a RuntimeError whose text is that worker's whole
traceback, and an executor's message may span lines or quote the data (a CSV cell with terminal escape codes):
printed as they are, one failure became hundreds of lines, or rewrote the terminal. `cause_line` is the line to
print; `write_error_log` keeps everything else in `<run>/<component>.failed/error.log`.
"""

from __future__ import annotations

import errno
import os
import re
from collections.abc import Iterator
from pathlib import Path

from kflow.pipeline.dsl.component import InputsRefused
from kflow.pipeline.dsl.printable import printable

_TRACEBACK = "Traceback (most recent call last):"
_WHERE_IN_BEAM = re.compile(r" \[while running '[^']*'\]$")  # Beam's "which transform", said in the log
MAX_CHARS = 600  # A line, not a page; the error log has it all.


def cause_line(error: BaseException) -> str:
    """`Type: message` in one printable line: for an error carrying a traceback as its text, that traceback's
    exception (the original cause, not Beam's wrapping); long messages cut with "…"."""
    text = str(error)
    if isinstance(error, InputsRefused):
        return _one_line(text)
    cause = f"{type(error).__name__}: {text}" if text else type(error).__name__
    return text_cause(text) or _one_line(cause)


def text_cause(text: str) -> str | None:
    """For a text holding a traceback (a Beam worker's, or a record's `error` written so): its last traceback's
    exception, in one printable line; None for a text without one."""
    lines = text.splitlines()
    headers = [index for index, line in enumerate(lines) if line.strip() == _TRACEBACK]
    if headers:  # the last traceback's exception: its first line that is not a frame
        original = next((line for line in lines[headers[-1] + 1 :] if line.strip() and not line[0].isspace()), None)
        if original is not None:
            return _one_line(_WHERE_IN_BEAM.sub("", original.strip()))
    return None


def _one_line(cause: str) -> str:
    one = printable(" ".join(cause.split()))
    return one if len(one) <= MAX_CHARS else one[: MAX_CHARS - 1] + "…"


def write_error_log(folder: Path, node_id: str, cause: str, trace: str) -> Path | None:
    """`folder/error.log`: the component, the cause and the whole traceback; None when it cannot be written (a full
    disk: run.json still holds the traceback)."""
    path = folder / "error.log"
    existed = folder.is_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        path.write_text(f"component: {node_id}\nerror: {cause}\n\n{trace}", encoding="utf-8", errors="replace")
    except OSError:
        # Nothing half-written left behind: an empty error.log (or folder) would only point at nothing.
        path.unlink(missing_ok=True)
        if not existed:
            try:
                folder.rmdir()
            except OSError:
                pass
        return None
    return path


DISK_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def exception_chain(error: BaseException | None) -> Iterator[BaseException]:
    """`error` and what caused it, however wrapped (its __cause__, else its __context__), each once."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        yield error
        error = error.__cause__ or error.__context__


def disk_full(error: BaseException) -> int | None:
    """ENOSPC, EDQUOT or EFBIG where `error` was caused by one, however wrapped: an OSError in its chain of causes,
    or the text Beam keeps when it re-raises a worker's error as a RuntimeError (`OSError: [Errno 28] No space left
    on device [while running 'WriteShards']`)."""
    for cause in exception_chain(error):
        if isinstance(cause, OSError) and cause.errno in DISK_FULL:
            return cause.errno
        text = str(cause)
        for number in DISK_FULL:
            if os.strerror(number) in text or f"[Errno {number}]" in text:
                return number
    return None


def disk_full_line(number: int, output: Path) -> str:
    """One line: which limit was reached, and where (the file system holding `output`, a component's folder)."""
    said = f"OSError: [Errno {number}] {os.strerror(number)}"
    if number == errno.EFBIG:
        return f"{said}: a file under {output} reached this process's file size limit; its partial output is removed"
    mount = _mount_point(output)
    where = "full" if number == errno.ENOSPC else "out of this user's quota"
    return f"{said}: the file system at {mount} is {where} (writing {output}); its partial output is removed"


def _mount_point(path: Path) -> Path:
    path = path.absolute()
    while not os.path.ismount(path) and path != path.parent:
        path = path.parent
    return path
