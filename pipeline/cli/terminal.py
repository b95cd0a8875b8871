"""What the command line sets up on its terminal: progress display, colour, native chatter filtered, log levels."""

from __future__ import annotations

import logging
import os
import sys

from kflow.pipeline.runners.beam_logs import BEAM_ELEMENT_LOGGERS
from kflow.pipeline.runners.cancellation import cancelled_in_process

# The command's exit codes (pipeline/cli/main.py's docstring lists them all).
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def say(text: str) -> None:
    """Prints a result to standard output. When its reader has gone (`kflow runs --json | head -1`), the rest is
    dropped, not an error: the command goes on (its errors still reach stderr, its exit code stays its own)."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        stdout_to_devnull()


def stdout_to_devnull() -> None:
    """Points standard output at /dev/null, so the flushes still to come (print's, the interpreter's at exit) do not
    fail again on the closed pipe (Python's documented way: docs.python.org/3/library/signal.html#note-on-sigpipe)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def colour() -> bool:
    """Colour only on a terminal, and never with NO_COLOR (no-color.org)."""
    return sys.stdout.isatty() and not os.environ.get("NO_COLOR")


def set_up_terminal(verbosity: int) -> None:
    """Progress bars when stderr is a terminal (for this process and its workers); native chatter filtered."""
    os.environ.setdefault("KFLOW_PROGRESS", "bar" if sys.stderr.isatty() else "plain")
    if verbosity < 1:
        from kflow.pipeline.cli.native_logs import filter_native_stderr

        filter_native_stderr()


# Start-up notices that say nothing about the run: Beam's, logged on the root logger at import.
_STARTUP_NOISE = ("apitools not found",)


def _not_startup_noise(record: logging.LogRecord) -> bool:
    startup = record.name == "root" and str(record.msg).startswith(_STARTUP_NOISE)
    # After a cancellation Beam's threads and workers say how they died of it, in tracebacks: kflow has said it.
    dying = record.name.startswith("apache_beam") and cancelled_in_process()
    return not startup and not dying and not _beam_worker_notice(record)


def _beam_worker_notice(record: logging.LogRecord) -> bool:
    """A multi-process Beam run's SDK worker's own notice, forwarded by the job service (`Worker: severity: WARN …
    message: "No semi_persistent_directory found …" log_location: ".../apache_beam/..."`: a user trial read two a
    component): Beam's, below an error. kflow's own lines in a worker pass, as errors do."""
    return (
        record.name == "apache_beam.runners.portability.local_job_service"
        and record.levelno < logging.ERROR
        and "/apache_beam/" in record.getMessage()
    )


def configure_logging(verbosity: int) -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S", stream=sys.stderr)
    if verbosity > 0:
        logging.getLogger("kflow").setLevel(logging.DEBUG)
        return
    if verbosity < 0:
        logging.getLogger().setLevel(logging.WARNING)
        logging.getLogger("kflow").setLevel(logging.WARNING)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    for handler in logging.getLogger().handlers:
        handler.addFilter(_not_startup_noise)
    for noisy in ("apache_beam", "absl", "tensorflow", "h5py", "matplotlib"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    for beam_logger in BEAM_ELEMENT_LOGGERS:  # kflow says a failed component in one line itself
        logging.getLogger(beam_logger).setLevel(logging.CRITICAL)
