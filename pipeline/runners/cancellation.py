"""Cancelling a run: SIGINT and SIGTERM become a `Cancelled` exception, and every process the
run started is stopped.

`Cancelled` subclasses KeyboardInterrupt, so code that already lets Ctrl-C through (Beam,
TensorFlow, an executor's `finally` that stops its own processes) treats SIGTERM the same way.
Executors may start process trees of their own (a local training cluster in its own process
groups), so the runner also stops every descendant of this process it can still find.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import psutil

from kflow.pipeline.dsl.beam_options import SDK_WORKER_MODULE
from kflow.pipeline.runners.failure import exception_chain

log = logging.getLogger("kflow")

# The shell convention: a process ended by signal N exits 128 + N.
EXIT_CODES = {signal.SIGINT: 130, signal.SIGTERM: 143}


class Cancelled(KeyboardInterrupt):
    """The run was cancelled by a signal (SIGINT, SIGTERM)."""

    def __init__(self, signum: int = signal.SIGINT):
        self.signum = signum
        super().__init__(signal.Signals(signum).name)

    @property
    def exit_code(self) -> int:
        return EXIT_CODES.get(self.signum, 128 + self.signum)

    @classmethod
    def from_interrupt(cls, interrupt: KeyboardInterrupt) -> Cancelled:
        return interrupt if isinstance(interrupt, Cancelled) else cls(signal.SIGINT)


# The signal that cancelled the run in progress (within `signals_cancel`), else None. The `Cancelled` it raised may
# not reach the runner as itself: Beam re-raises what a DoFn raised as a RuntimeError ("…Cancelled: SIGINT [while
# running …]"), a worker thread's failure crosses threads as text, a finaliser that was running swallows it.
_requested: int | None = None


def requested() -> int | None:
    """The signal (SIGINT, SIGTERM) that has cancelled the run in progress, if one has."""
    return _requested


# The signal that cancelled a run of this process, kept after the run: what Beam's threads and workers say as they
# die of it comes while the run ends, and after (`Python sdk harness failed`, `Failed to read inputs in the data
# plane`, with tracebacks): the signal's doing, which kflow's one line has said.
_cancelled_before: int | None = None


def cancelled_in_process() -> bool:
    """Whether a signal has cancelled a run of this process (the one in progress, or one that ended)."""
    return _cancelled_before is not None


def interruption(error: BaseException) -> KeyboardInterrupt | None:
    """The cancellation behind `error`, however it was wrapped: a KeyboardInterrupt in its chain of causes, else
    `Cancelled` when a signal has cancelled the run (then whatever failed, failed because of it)."""
    for cause in exception_chain(error):
        if isinstance(cause, KeyboardInterrupt):
            return cause
    return Cancelled(_requested) if _requested is not None else None


def raise_if_cancelled() -> None:
    """Raises `Cancelled` when a signal has cancelled the run, though its exception was swallowed on the way."""
    if _requested is not None:
        raise Cancelled(_requested)


@contextmanager
def signals_cancel() -> Iterator[None]:
    """Within the block (main thread only), SIGINT and SIGTERM raise `Cancelled` and are remembered (`requested`);
    a second signal while the first is being handled is ignored, so the clean-up is not interrupted."""
    global _requested

    def handler(signum, _frame):
        global _requested, _cancelled_before
        for number in EXIT_CODES:
            signal.signal(number, signal.SIG_IGN)
        _requested = _cancelled_before = signum
        stop_beam_workers()
        raise Cancelled(signum)

    _requested = None
    previous = {number: signal.signal(number, handler) for number in EXIT_CODES}
    thread_hook = threading.excepthook
    threading.excepthook = _quiet_after_cancellation(thread_hook)
    try:
        yield
    finally:
        for number, action in previous.items():
            signal.signal(number, action)
        if _requested is None:  # else the threads the signal stopped may end after the block (and say so): quiet
            threading.excepthook = thread_hook
        _requested = None


def _quiet_after_cancellation(hook):
    """A thread's uncaught exception after a signal cancelled the run is the signal's doing (Beam's `run_worker`
    thread: `RuntimeError: Worker subprocess exited with return code -2`, a traceback after kflow's one line that
    says the run was cancelled): logged at debug level, not printed. Before it, `hook` prints it as Python does."""

    def quiet(args: threading.ExceptHookArgs) -> None:
        if _requested is None and not cancelled_in_process():  # no cancellation (yet)
            hook(args)
            return
        log.debug("after the cancellation, thread %s ended: %s", getattr(args.thread, "name", "?"), args.exc_value)

    return quiet


def stop_beam_workers() -> None:
    """SIGTERM, at once, to the Beam SDK worker processes of this process's `multi_processing` pipelines. When an
    exception (the `Cancelled` about to be raised) leaves a pipeline, Beam's clean-up closes each worker's control
    channel and waits for its process to end, without a bound: a worker mid-bundle never ends by itself (a cancelled
    multi-process ingest hung there); SIGTERM ends it silently, then Beam's clean-up goes on."""
    for child in psutil.Process().children(recursive=True):
        try:
            if SDK_WORKER_MODULE in " ".join(child.cmdline()):
                child.terminate()
        except psutil.Error:  # ended meanwhile
            pass


def stop_child_processes(grace: float = 5.0) -> int:
    """SIGTERM to every descendant of this process, SIGKILL to those alive after `grace` seconds;
    returns how many there were."""
    children = psutil.Process().children(recursive=True)
    for child in children:
        try:
            child.terminate()
        except psutil.NoSuchProcess:
            pass
    _, alive = psutil.wait_procs(children, timeout=grace)
    for child in alive:
        try:
            child.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(alive, timeout=grace)
    if children:
        log.debug("stopped %d process(es) the run had started", len(children))
    return len(children)
