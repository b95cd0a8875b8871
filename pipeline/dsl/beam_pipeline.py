"""A Beam pipeline that leaves no temporary folder behind, however its block ends.

`beam.Pipeline` makes a local temporary folder (`beam-pipeline-temp*`) when it is built and removes it only at
the end of `run()`: when the `with` block that builds the pipeline raises (a transform refused, a bad side input,
Ctrl-C), nothing runs and the folder stays in the temp directory. Every kflow pipeline is built through here. A
pipeline still running in another thread when the process ends (the DAG runner's component beside one that failed,
ended by `exit_now`, which runs the `atexit` handlers and not the threads' `finally`) has its folder removed then.
"""

from __future__ import annotations

import atexit
import contextlib
import shlex
import shutil
import sys
from collections.abc import Iterator
from typing import Any

import apache_beam as beam
from apache_beam.options.pipeline_options import DirectOptions, PipelineOptions, StandardOptions
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.runners.worker import sdk_worker
from apache_beam.transforms.environments import SubprocessSDKEnvironment

from kflow.pipeline.dsl.beam_options import LOCAL_RUNNER, SDK_WORKER_MODULE


@contextlib.contextmanager
def beam_pipeline(options: PipelineOptions) -> Iterator[beam.Pipeline]:
    """`with beam_pipeline(options) as pipeline:` builds the pipeline, then runs it as `with beam.Pipeline(...)`
    does; its temporary folder is removed either way."""
    pipeline = beam.Pipeline(runner=_local_runner(options), options=options)
    _OPEN.add(pipeline.local_tempdir)
    try:
        with pipeline:
            yield pipeline
    finally:
        shutil.rmtree(pipeline.local_tempdir, ignore_errors=True)
        _OPEN.discard(pipeline.local_tempdir)


_OPEN: set[str] = set()  # the folders of the pipelines in this process that have not ended

# Beam's own command for a `multi_processing` worker (FnApiRunner.run_pipeline), run by a shell that ignores SIGINT
# first: an ignored signal stays ignored across `exec`, and Python then installs no KeyboardInterrupt handler.
_WORKER_COMMAND = "trap '' INT; exec {python} -m " + SDK_WORKER_MODULE


def _local_runner(options: PipelineOptions) -> FnApiRunner | None:
    """The FnApiRunner for `direct_running_mode=multi_processing`, its SDK worker processes deaf to SIGINT; None
    (the runner the options name) otherwise. A terminal's Ctrl-C signals every process of its group: each worker
    printed its KeyboardInterrupt traceback, written a few bytes at a time, so two workers' lines came mixed on the
    user's terminal (no filter can take them apart). The run's cancellation stops the workers (SIGTERM, silent)."""
    direct = options.view_as(DirectOptions)
    if options.view_as(StandardOptions).runner != LOCAL_RUNNER or direct.direct_running_mode != "multi_processing":
        return None
    command = _WORKER_COMMAND.format(python=shlex.quote(sys.executable))
    return _WorkerProcessesRunner(default_environment=SubprocessSDKEnvironment.from_command_string(command))


class _WorkerProcessesRunner(FnApiRunner):
    """Runs a `multi_processing` pipeline on its own worker command: FnApiRunner.run_pipeline replaces the
    environment with Beam's command when the options name that mode, so the mode is unnamed while it runs (and
    named again after: the options are the caller's, who may read them)."""

    def run_pipeline(self, pipeline: beam.Pipeline, options: PipelineOptions) -> Any:
        direct = options.view_as(DirectOptions)
        mode, direct.direct_running_mode = direct.direct_running_mode, None
        try:
            return super().run_pipeline(pipeline, options)
        finally:
            direct.direct_running_mode = mode


@atexit.register
def _remove_open_folders() -> None:
    for folder in list(_OPEN):
        shutil.rmtree(folder, ignore_errors=True)


def _print_but_not_to_stderr(*values: Any, file: Any = None, **options: Any) -> None:
    if file is not sys.stderr:
        print(*values, file=file, **options)


# Beam's SDK worker prints a failed bundle's traceback to stderr itself (SdkWorker._execute, its only print) besides
# logging the same traceback (logger apache_beam.runners.worker.sdk_worker, ERROR). kflow's CLI silences that logger:
# a failed component is one line there, its traceback in the component's error.log; the print alone would still put
# the traceback on the user's terminal. A library user's logging keeps the logged copy.
sdk_worker.print = _print_but_not_to_stderr
