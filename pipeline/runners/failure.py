"""A component's failure said in one line, with its details in a file beside the run.

Beam re-raises what failed in a worker thread or process as a RuntimeError whose text is that worker's whole
traceback, and an executor's message may span lines or quote the data (a CSV cell with terminal escape codes):
printed as they are, one failure became hundreds of lines, or rewrote the terminal. `cause_line` is the line to
print; `write_error_log` keeps everything else in `<run>/<component>.failed/error.log`.
"""

from __future__ import annotations

import re
from pathlib import Path

from kflow.pipeline.dsl.printable import printable

_TRACEBACK = "Traceback (most recent call last):"
_WHERE_IN_BEAM = re.compile(r" \[while running '[^']*'\]$")  # Beam's "which transform", said in the log
MAX_CHARS = 600  # A line, not a page; the error log has it all.


def cause_line(error: BaseException) -> str:
    """`Type: message` in one printable line: for an error carrying a traceback as its text, that traceback's
    exception (the original cause, not Beam's wrapping); long messages cut with "…"."""
    text = str(error)
    cause = f"{type(error).__name__}: {text}" if text else type(error).__name__
    lines = text.splitlines()
    headers = [index for index, line in enumerate(lines) if line.strip() == _TRACEBACK]
    if headers:  # the last traceback's exception: its first line that is not a frame
        original = next((line for line in lines[headers[-1] + 1 :] if line.strip() and not line[0].isspace()), None)
        if original is not None:
            cause = _WHERE_IN_BEAM.sub("", original.strip())
    one = printable(" ".join(cause.split()))
    return one if len(one) <= MAX_CHARS else one[: MAX_CHARS - 1] + "…"


def write_error_log(folder: Path, node_id: str, cause: str, trace: str) -> Path | None:
    """`folder/error.log`: the component, the cause and the whole traceback; None when it cannot be written (a full
    disk: run.json still holds the traceback)."""
    path = folder / "error.log"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        path.write_text(f"component: {node_id}\nerror: {cause}\n\n{trace}", encoding="utf-8", errors="replace")
    except OSError:
        return None
    return path
