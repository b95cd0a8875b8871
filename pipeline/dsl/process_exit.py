"""Ending a process that has done its work without the interpreter's teardown.

Once TensorFlow (or JAX) is loaded, Python's own end (finalising its modules, then the native libraries' static
destructors) takes 1.2-1.6 s here after the last line of work (a `fit` of a small model in a fresh process: its
`print` 1.2 s before the process was gone, 0.05 s with this), and 4-6 s for a cluster's worker: time a user, or a
launcher waiting for its processes, waits for nothing. `exit_now` does what Python's end does that matters (the
`atexit` handlers: logging's flush, temporary folders' removal, tools' own), flushes the standard streams and
ends the process with `code`. Only for a program's main path, when its outputs are written and closed; under a
profiler, a debugger or a coverage tool, which write their results after the program's end, it is `sys.exit`.
"""

from __future__ import annotations

import atexit
import logging
import os
import sys
from typing import NoReturn


def exit_now(code: int) -> NoReturn:
    if sys.getprofile() is not None or sys.gettrace() is not None:
        sys.exit(code)  # A profiler, debugger or coverage tool writes its results after this: the usual end
    atexit._run_exitfuncs()  # What the interpreter's end runs first
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # closed, or a pipe whose reader went away
            pass
    os._exit(code)
