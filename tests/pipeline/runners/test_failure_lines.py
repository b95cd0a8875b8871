"""A component's failure is one line naming the component, the cause and a file that exists with the details;
log lines name where outputs are published, not the staging folder that is gone once the node ends."""

import json
import logging
from pathlib import Path

import pytest

from kflow.pipeline.dsl.artifacts import Examples
from kflow.pipeline.dsl.component import Component, ComponentSpec, Parameter
from kflow.pipeline.dsl.dag import Pipeline
from kflow.pipeline.runners.beam_dag_runner import BeamDagRunner, PipelineFailed
from kflow.pipeline.runners.failure import cause_line

log = logging.getLogger("kflow.tests.shout")

# What Beam raises for an element that failed in a worker thread or process: the worker's traceback as its text.
WORKER_FAILURE = (
    "Traceback (most recent call last):\n"
    '  File "apache_beam/runners/worker/sdk_worker.py", line 310, in _execute\n'
    "    response = task()\n"
    '  File "reader.py", line 7, in read\n'
    "    raise ValueError(cell)\n"
    "ValueError: bad cell \x1b[31mred\x1b[2J [while running 'Read/Parse']\n"
)


def shout(*, out, message):
    """Logs the file it writes, writes it, then fails with `message` when there is one."""
    log.info("shout: writing %s", out.path / "said.txt")
    (out.path / "said.txt").write_text("said")
    if message:
        raise RuntimeError(message)
    return {}


class Shout(Component):
    spec = ComponentSpec(
        outputs={"out": Examples},
        parameters={"message": Parameter(str, default="")},
        executor=f"{__name__}:shout",
    )


def test_a_worker_failure_is_one_line_with_its_cause_and_a_log_that_exists(tmp_path):
    with pytest.raises(PipelineFailed) as caught:
        BeamDagRunner().run(Pipeline("toy", [Shout("shout", parameters={"message": WORKER_FAILURE})]), tmp_path)
    failure = caught.value
    # The original cause, its escape codes shown and not obeyed, Beam's wrapping and its "which transform" left out.
    assert str(failure) == "component 'shout' failed: ValueError: bad cell \\x1b[31mred\\x1b[2J"
    run_dir = failure.result.run_dir
    assert failure.details == run_dir / "shout.failed" / "error.log"
    details = failure.details.read_text()
    assert details.startswith("component: shout\nerror: ValueError: bad cell \\x1b[31mred\\x1b[2J\n")
    assert "Traceback (most recent call last)" in details and "raise ValueError(cell)" in details
    assert "RuntimeError: Traceback" in details  # the error as raised, whole, after the traceback of its raising
    entry = json.loads((run_dir / "run.json").read_text())["components"]["shout"]
    assert entry["error"] == "ValueError: bad cell \\x1b[31mred\\x1b[2J" and entry["error_log"] == str(failure.details)
    assert (run_dir / "shout.failed" / "out" / "said.txt").is_file()  # what it wrote, kept beside its log


def test_log_lines_name_the_published_folder_not_the_staging_one(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="kflow")
    result = BeamDagRunner().run(Pipeline("toy", [Shout("shout")]), tmp_path)
    (said,) = [record.getMessage() for record in caplog.records if record.getMessage().startswith("shout: writing")]
    assert said == f"shout: writing {result.run_dir / 'shout' / 'out' / 'said.txt'}"
    assert Path(said.removeprefix("shout: writing ")).is_file()


@pytest.mark.parametrize(
    "error, line",
    [
        (ValueError("two\nlines"), "ValueError: two lines"),
        (LookupError(), "LookupError"),
        (OSError(28, "No space left on device"), "OSError: [Errno 28] No space left on device"),
        (RuntimeError("x" * 2000), "RuntimeError: " + "x" * 585 + "…"),
    ],
)
def test_the_cause_is_one_printable_line(error, line):
    assert cause_line(error) == line
