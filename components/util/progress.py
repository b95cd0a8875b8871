"""Progress of long steps (the epochs of training, the records of an ingest): a tqdm bar in a
terminal, periodic log lines elsewhere.

The mode comes from `KFLOW_PROGRESS`: `bar` (a terminal: the kflow CLI sets it when its stderr
is one), `plain` (a log line every `log_every_steps` steps: CI, files, Kubeflow pods), `events`
(one machine-readable line per update on stdout, which the local launcher turns into the bar of
a training cluster's chief or worker 0 in its own terminal), `off` (the other workers). Unset: a
bar when stderr is a terminal, plain lines otherwise.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from collections.abc import Callable

from tqdm import tqdm

from kflow.pipeline.dsl import heartbeat

log = logging.getLogger("kflow")

EVENT = "KFLOW-PROGRESS "


def mode() -> str:
    chosen = os.environ.get("KFLOW_PROGRESS")
    if chosen in ("bar", "plain", "events", "off"):
        return chosen
    return "bar" if sys.stderr.isatty() else "plain"


class EpochProgress:
    """Shows the steps of one epoch: `update(step, loss)` after each step, `close()` at its end."""

    def __init__(self, epoch: int, epochs: int, steps: int, batch_size: int, log_every_steps: int = 100):
        self.epoch, self.epochs, self.steps, self.batch_size = epoch, epochs, steps, batch_size
        self.log_every_steps = log_every_steps
        self.mode = mode()
        self.started = time.perf_counter()
        self.shown = 0.0
        self.loss: float | None = None
        self.step = 0
        self.bar = new_bar(epoch, epochs, steps) if self.mode == "bar" else None

    def update(self, step: int, loss: Callable[[], float] | None = None) -> None:
        """`step`: steps done in this epoch so far. `loss()` reads the running loss, which can be a
        collective op (MWMS all-reduces the metrics): every process calls it at the same steps, each
        `log_every_steps`, whatever it shows."""
        heartbeat.beat((self.epoch - 1) * self.steps + step)
        now = time.perf_counter()
        # Due when a multiple of log_every_steps was reached since the last update (steps can come several at once:
        # trainer.steps_per_execution).
        due = step // self.log_every_steps > self.step // self.log_every_steps and step < self.steps
        self.step = step
        if due and loss is not None:
            self.loss = loss()
        speed = step * self.batch_size / max(now - self.started, 1e-9)
        if self.mode == "plain" and due:
            shown = "" if self.loss is None else f" loss={self.loss:.4f}"
            log.info(
                "train: epoch %d/%d step %d/%d%s (%.0f ex/s)", self.epoch, self.epochs, step, self.steps, shown, speed
            )
        if self.mode not in ("bar", "events") or (now - self.shown < 0.2 and step < self.steps):
            return
        self.shown = now
        if self.bar is not None:
            show(self.bar, step, self.loss, speed)
        else:
            event = {"epoch": self.epoch, "epochs": self.epochs, "step": step, "steps": self.steps, "loss": self.loss}
            send_event({**event, "examples_per_second": speed})

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def send_event(event: dict) -> None:
    """One progress event on stdout, as ONE write() of a whole line: the launcher reads stdout and stderr merged
    in one pipe, where another writer's bytes may land between two writes (print() writes the line and its
    newline apart when unbuffered); a write of at most PIPE_BUF bytes to a pipe is never interleaved."""
    sys.stdout.flush()  # what was printed before goes first
    os.write(sys.stdout.fileno(), (EVENT + json.dumps(event) + "\n").encode())


def new_bar(epoch: int, epochs: int, steps: int) -> tqdm:
    return tqdm(
        total=steps, desc=f"epoch {epoch}/{epochs}", unit="step", leave=False, file=sys.stderr, dynamic_ncols=True
    )


def show(bar: tqdm, step: int, loss: float | None, speed: float) -> None:
    bar.n = step
    postfix = {"ex/s": f"{speed:.0f}"}
    if loss is not None:
        postfix["loss"] = f"{loss:.4f}"
    bar.set_postfix(postfix, refresh=False)
    bar.refresh()


class EventBar:
    """The launcher's side of `events`: turns a worker's progress lines into one bar in this terminal."""

    def __init__(self) -> None:
        self.bar: tqdm | None = None
        self.epoch = None
        self.unreadable = 0

    def handle(self, line: str) -> bool:
        """Consumes `line` when it is a progress event (returns True); a line that only looks like one (another
        writer's bytes mixed in) is logged and left to be shown as text."""
        if not line.startswith(EVENT):
            return False
        try:
            event = json.loads(line[len(EVENT) :])
            epoch, epochs, steps = event["epoch"], event["epochs"], event["steps"]
            step, loss, speed = event["step"], event["loss"], event["examples_per_second"]
        except (ValueError, KeyError, TypeError) as error:
            self.unreadable += 1
            log.debug("an unreadable progress line (%s), shown as text: %r", error, line[:200])
            return False
        if epoch != self.epoch:
            self.close()
            self.bar, self.epoch = new_bar(epoch, epochs, steps), epoch
        show(self.bar, step, loss, speed)
        return True

    def write(self, text: str, sink) -> None:
        """Writes a log line above the bar."""
        if self.bar is not None:
            self.bar.clear()
        sink.write(text)
        sink.flush()
        if self.bar is not None:
            self.bar.refresh()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


class RecordProgress:
    """Records processed out of `total`: a bar, or (`plain`) a log line at a tenth reached at least
    `every` seconds after the last one, so a quick ingest stays quiet and a long one shows it moves."""

    def __init__(self, what: str, total: int, allow_bar: bool = True, every: float = 5.0):
        self.what, self.total, self.done = what, max(total, 1), 0
        self.every, self.last = every, time.perf_counter()
        chosen = mode()
        self.bar = (
            tqdm(total=total, desc=what, unit="rec", leave=False, file=sys.stderr)
            if chosen == "bar" and allow_bar
            else None
        )
        self.plain = chosen in ("plain", "bar") and self.bar is None

    def add(self, count: int) -> None:
        before, self.done = self.done, self.done + count
        if self.bar is not None:
            self.bar.update(count)
        elif self.plain and before * 10 // self.total != self.done * 10 // self.total:
            if time.perf_counter() - self.last < self.every:
                return
            self.last = time.perf_counter()
            log.info(
                "%s: %d of %d records processed (%d%%)", self.what, self.done, self.total, 100 * self.done // self.total
            )

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
