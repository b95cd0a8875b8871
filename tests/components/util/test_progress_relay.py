"""The progress channel of a training cluster: events and other output share one pipe, and neither wedges the other."""

import io
import os
import subprocess
import sys
import threading

from kflow.components.trainer.launcher import _stream
from kflow.components.util.progress import EVENT, EventBar

# A worker whose other threads write to the same stdout while it sends events, unbuffered (every print() is
# several write() calls): 3,000 events and 3,000 bursts of noise, a third of them without a newline.
CHILD = """
import os, sys, threading
from kflow.components.util.progress import send_event

def noise():
    for i in range(3000):
        print("noise" * 40, end="" if i % 3 == 0 else "\\n")

thread = threading.Thread(target=noise)
thread.start()
for step in range(3000):
    send_event({"epoch": 1, "epochs": 1, "step": step, "steps": 3000, "loss": 0.5, "examples_per_second": 1.0})
thread.join()
print("done", flush=True)
"""


def test_a_flooded_pipe_never_stops_the_relay_nor_the_worker():
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    sink, bar = io.StringIO(), EventBar()
    relay = threading.Thread(target=_stream, args=("worker-0", child.stdout, sink, bar))
    relay.start()
    try:
        assert child.wait(timeout=120) == 0
        relay.join(timeout=60)
        assert not relay.is_alive()
    finally:
        child.kill()
    shown = sink.getvalue()
    assert shown.rstrip().endswith("[worker-0] done")
    assert shown.count("noise") == 3000 * 40  # every byte of the other writer reached the log
    assert bar.epoch == 1  # the events drove the bar
    assert EVENT not in shown.replace(f"noise{EVENT}", "")  # no event shown as text but one glued to noise


def test_a_line_that_only_looks_like_an_event_is_text():
    bar = EventBar()
    for line in (f"{EVENT}{{not json", f'{EVENT}{{"epoch": 1}}', f"{EVENT}[]"):
        assert bar.handle(line) is False
    assert bar.unreadable == 3 and bar.bar is None
