"""kflow's Beam pipelines leave no `beam-pipeline-temp*` folder behind, whether they run or their building fails.
The DirectRunner named as a config names it: kflow's pipelines run it as `named_runner` says (Beam's own would try
Prism first and leave a /tmp/beam-temp* folder of its own)."""

from __future__ import annotations

import ast
import os

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions

from kflow.pipeline.dsl.beam_options import named_runner
from kflow.pipeline.dsl.beam_pipeline import beam_pipeline


def test_a_pipeline_whose_building_fails_leaves_no_temporary_folder():
    with pytest.raises(ValueError, match="refused while building"):
        with beam_pipeline(PipelineOptions(named_runner(["--runner=DirectRunner"]))) as pipeline:
            folder = pipeline.local_tempdir
            assert os.path.isdir(folder)
            raise ValueError("refused while building")
    assert not os.path.exists(folder)


def test_a_pipeline_runs_when_its_block_ends_and_leaves_no_temporary_folder(tmp_path):
    out = tmp_path / "out.txt"
    with beam_pipeline(PipelineOptions(named_runner(["--runner=DirectRunner"]))) as pipeline:
        folder = pipeline.local_tempdir
        _ = pipeline | beam.Create([3]) | beam.Map(lambda value: out.write_text(str(value * 2)))
        assert not out.exists()  # Nothing runs before the block ends.
    assert out.read_text() == "6"
    assert not os.path.exists(folder)


_STILL_RUNNING = """
import threading, time
import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions
from kflow.pipeline.dsl.beam_options import named_runner
from kflow.pipeline.dsl.beam_pipeline import beam_pipeline
from kflow.pipeline.dsl.process_exit import exit_now

def run():
    with beam_pipeline(PipelineOptions(named_runner(["--runner=DirectRunner"]))) as pipeline:
        print(pipeline.local_tempdir, flush=True)
        _ = pipeline | beam.Create([1]) | beam.Map(lambda value: time.sleep(600))

threading.Thread(target=run, daemon=True).start()
time.sleep(3)
exit_now(3)
"""


def test_a_pipeline_still_running_when_the_process_ends_leaves_no_temporary_folder(tmp_path):
    """As the DAG runner's CLI ends when one component failed while another's pipeline runs in a thread."""
    import subprocess
    import sys

    env = dict(os.environ, TMPDIR=str(tmp_path))
    done = subprocess.run([sys.executable, "-c", _STILL_RUNNING], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 3, done.stderr[-2000:]
    folder = done.stdout.split()[0]
    assert folder.startswith(str(tmp_path))
    assert not os.path.exists(folder)
    assert not list(tmp_path.glob("beam-pipeline-temp*"))


def _sigint_ignored(_: int) -> tuple[int, bool]:
    import signal

    return os.getpid(), signal.getsignal(signal.SIGINT) == signal.SIG_IGN


def test_a_multi_process_pipelines_workers_are_deaf_to_sigint_and_still_run_it(tmp_path):
    """A terminal's Ctrl-C reaches every process of its group: Beam's SDK workers printed their KeyboardInterrupt
    tracebacks a few bytes at a time, mixed on the user's terminal. Now they ignore SIGINT (the run's cancellation
    stops them: tests/reliability/test_cancel_during_beam.py) and still run the pipeline, in their own processes."""
    out = tmp_path / "out.txt"
    options = PipelineOptions(named_runner(["--direct_running_mode=multi_processing", "--direct_num_workers=2"]))
    with beam_pipeline(options) as pipeline:
        results = pipeline | beam.Create(range(8)) | beam.Map(_sigint_ignored)
        _ = results | beam.combiners.ToList() | beam.Map(lambda seen: out.write_text(repr(sorted(set(seen)))))
    seen = ast.literal_eval(out.read_text())
    assert seen and all(ignored for _, ignored in seen), seen
    assert os.getpid() not in {pid for pid, _ in seen}  # run in worker processes, not in memory here
    assert options.get_all_options()["direct_running_mode"] == "multi_processing"  # the caller's options unchanged
