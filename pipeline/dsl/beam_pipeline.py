"""A Beam pipeline that leaves no temporary folder behind, however its block ends.

`beam.Pipeline` makes a local temporary folder (`beam-pipeline-temp*`) when it is built and removes it only at
the end of `run()`: when the `with` block that builds the pipeline raises (a transform refused, a bad side input,
Ctrl-C), nothing runs and the folder stays in the temp directory. Every kflow pipeline is built through here.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions


@contextlib.contextmanager
def beam_pipeline(options: PipelineOptions) -> Iterator[beam.Pipeline]:
    """`with beam_pipeline(options) as pipeline:` builds the pipeline, then runs it as `with beam.Pipeline(...)`
    does; its temporary folder is removed either way."""
    pipeline = beam.Pipeline(options=options)
    try:
        with pipeline:
            yield pipeline
    finally:
        shutil.rmtree(pipeline.local_tempdir, ignore_errors=True)
