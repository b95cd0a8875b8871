"""Keeps native libraries' start-up chatter off the terminal unless `-v`.

TensorFlow, XLA and gRPC log from C++ through Abseil, which writes to the stderr file
descriptor before any Python logging is set up and ignores `TF_CPP_MIN_LOG_LEVEL` for those
early lines (abseil/abseil-cpp#1718). So the `kflow` process routes its stderr descriptor
through a pipe and drops those lines: the `I…`/`W…` ones, and `E…` ones about the missing
CUDA driver of a CPU machine; and the tracebacks Beam's workers print raw, which the failed
component's error log holds (BeamWorkerTracebacks). Child processes (a training cluster's workers) inherit the
descriptor, and their lines arrive prefixed `[worker-0] `, so they are filtered too. Any
other line, including native errors, passes through unchanged.
"""

from __future__ import annotations

import atexit
import os
import re
import sys
import threading

from kflow.pipeline.runners.cancellation import cancelled_in_process

# Abseil / glog: "I0000 00:00:1795479493.379393    2758 port.cc:153] ...", optionally behind "[worker-0] ".
_NATIVE = re.compile(rb"^(\[[\w-]+\] )?([IWE])\d{4} \d\d:\d\d:\d+\.\d+ +\d+ [\w./-]+:\d+\] (.*)")
_CHATTER = (
    b"WARNING: All log messages before absl::InitializeLog() is called are written to STDERR",
    b"To enable the following instructions:",  # The second line of TensorFlow's CPU-feature notice.
    b"[Gloo] Rank ",  # JAX's CPU collectives saying each process connected to its peers.
    # A multi-process Beam ingest's SDK workers log through Python's basicConfig (a user trial: 40 such lines).
    b"INFO:apache_beam.",
    b"INFO:__main__:",  # sdk_worker_main: "Python sdk harness starting.", "Pipeline_options: {}", ...
    b"WARNING:root:apitools not found",
    b"WARNING:__main__:No semi_persistent_directory found",
)
# A Beam SDK worker's own lines of its death, after a signal cancelled the run (`Python sdk harness failed:`).
_WORKER_DYING = (b"CRITICAL:__main__:", b"ERROR:__main__:", b"ERROR:apache_beam.", b"CRITICAL:apache_beam.")
# E-level lines that are no errors: the missing CUDA driver of a CPU machine, oneDNN's int64 fallback notice.
_CPU_ONLY_ERRORS = re.compile(rb"cuInit|CUDA|cuda|oneDNN supports DT_INT64", re.IGNORECASE)
_PIECES = re.compile(rb"[^\r\n]*(?:\r\n|\n|\r)|[^\r\n]+")


def is_chatter(line: bytes) -> bool:
    body = re.sub(rb"^\[[\w-]+\] ", b"", line)
    if body.startswith(_CHATTER) or (body.startswith(_WORKER_DYING) and cancelled_in_process()):
        return True
    native = _NATIVE.match(line)
    if native is None:
        return False
    return native.group(2) in (b"I", b"W") or bool(_CPU_ONLY_ERRORS.search(native.group(3)))


class RemoteFunctionRemovals:
    """Drops TensorFlow's notice that a connected cluster's task never held a function the client removes (a
    tf.data dataset made in a parameter-server chief, freed: `Failed to remove function remotely due to Tried to
    remove non-existent function ...`, and the gRPC lines that follow it, up to `This could happen if the remote
    target has been disconnected from the client.`): nothing failed, the run goes on. Every other E line passes."""

    _FIRST = b"Failed to remove function remotely due to Tried to remove non-existent function"
    _LAST = b"This could happen if the remote target has been disconnected from the client."
    _MAX_HELD = 8  # lines after the first: a notice that never ends lets the rest through

    def __init__(self) -> None:
        self.dropping, self.prefix = 0, b""

    def feed(self, piece: bytes) -> list[bytes]:
        native = _NATIVE.match(piece)
        if native is not None and self._FIRST in native.group(3):
            self.dropping, self.prefix = 1, native.group(1) or b""
            return []
        # Its next lines, of the same process (a cluster's processes share the descriptor, each line its prefix).
        if self.dropping and self.prefix and not piece.startswith(self.prefix):
            return [piece]  # another process's line, inside the notice: it passes, the notice's rest is dropped
        if self.dropping and native is None and self.dropping <= self._MAX_HELD:
            last = piece[len(self.prefix) :].startswith(self._LAST)
            self.dropping = 0 if last else self.dropping + 1
            return []
        self.dropping = 0
        return [piece]


class BeamWorkerTracebacks:
    """Drops the tracebacks Beam's SDK worker prints raw to stderr (`sdk_worker._execute`: `print(traceback)`, then
    logs it, then raises it again): the failed component's one line names its error log, which holds it. Other
    tracebacks pass whole: a block is held until its exception line shows whose it is."""

    _HEADER = b"Traceback (most recent call last):"
    _MARK = b"apache_beam/runners/worker/sdk_worker.py"
    _LINKS = (b"During handling of the above exception", b"The above exception was the direct cause")
    _MAX_HELD = 2000  # lines: a block that never ends is let through rather than held for ever

    def __init__(self) -> None:
        self.held: list[bytes] = []
        self.after_dropped = False

    def feed(self, piece: bytes) -> list[bytes]:
        body = piece.rstrip(b"\r\n")
        if not self.held and body == self._HEADER:
            self.held = [piece]
            return []
        if not self.held:
            if self.after_dropped and (not body.strip() or body[:1].isspace() or body.startswith(self._LINKS)
                                       or self._dying(body)):  # fmt: skip
                return []  # the blank and linking lines of a dropped chain, and the rest of the workers' ends
            self.after_dropped = False
            return [piece]
        self.held.append(piece)
        if (body[:1].isspace() or body == self._HEADER) and len(self.held) < self._MAX_HELD:
            return []  # a frame (or another process's traceback beginning among its lines): the block goes on
        block, self.held = self.held, []
        # A worker's; a process's end by Ctrl-C (the terminal signals every process of the run: each SDK worker prints
        # its KeyboardInterrupt, their lines mixed); any after a cancellation: what the signal stopped, saying so.
        self.after_dropped = cancelled_in_process() or any(self._dying(line) for line in block)
        return [] if self.after_dropped else block

    def _dying(self, line: bytes) -> bool:
        return self._MARK in line or b"sdk_worker_main.py" in line or b"KeyboardInterrupt" in line

    def flush(self) -> list[bytes]:
        block, self.held = self.held, []
        return block


def filter_native_stderr() -> None:
    """Routes file descriptor 2 through a filter thread for the rest of the process."""
    sys.stderr.flush()
    original = os.dup(2)
    read_end, write_end = os.pipe()
    os.dup2(write_end, 2)
    os.close(write_end)

    def pump() -> None:
        # Pieces end at "\n" or at "\r", so a progress bar's in-place updates pass at once, not at its end.
        pending = b""
        tracebacks, removals = BeamWorkerTracebacks(), RemoteFunctionRemovals()
        while chunk := os.read(read_end, 65536):
            pieces = _PIECES.findall(pending + chunk)
            pending = pieces.pop() if pieces and not pieces[-1].endswith((b"\n", b"\r")) else b""
            kept = [
                line
                for piece in pieces
                if not is_chatter(piece)
                for kept_piece in removals.feed(piece)
                for line in tracebacks.feed(kept_piece)
            ]
            os.write(original, b"".join(kept))
        os.write(original, b"".join(tracebacks.flush()))
        if pending and not is_chatter(pending):
            os.write(original, pending)
        os.close(read_end)

    thread = threading.Thread(target=pump, name="kflow-stderr-filter", daemon=True)
    thread.start()

    def restore() -> None:
        sys.stderr.flush()
        os.dup2(original, 2)  # Closes the pipe's last write end held here: the pump reads to the end.
        thread.join(timeout=2)

    atexit.register(restore)
