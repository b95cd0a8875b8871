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
import shutil
import sys
from collections.abc import Iterator
from typing import Any

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.runners.worker import sdk_worker


@contextlib.contextmanager
def beam_pipeline(options: PipelineOptions) -> Iterator[beam.Pipeline]:
    """`with beam_pipeline(options) as pipeline:` builds the pipeline, then runs it as `with beam.Pipeline(...)`
    does; its temporary folder is removed either way."""
    pipeline = beam.Pipeline(options=options)
    _OPEN.add(pipeline.local_tempdir)
    try:
        with pipeline:
            yield pipeline
    finally:
        shutil.rmtree(pipeline.local_tempdir, ignore_errors=True)
        _OPEN.discard(pipeline.local_tempdir)


_OPEN: set[str] = set()  # the folders of the pipelines in this process that have not ended


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
