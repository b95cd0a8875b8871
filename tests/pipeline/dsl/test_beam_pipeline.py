"""kflow's Beam pipelines leave no `beam-pipeline-temp*` folder behind, whether they run or their building fails."""

from __future__ import annotations

import os

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions

from kflow.pipeline.dsl.beam_pipeline import beam_pipeline


def test_a_pipeline_whose_building_fails_leaves_no_temporary_folder():
    with pytest.raises(ValueError, match="refused while building"):
        with beam_pipeline(PipelineOptions(["--runner=DirectRunner"])) as pipeline:
            folder = pipeline.local_tempdir
            assert os.path.isdir(folder)
            raise ValueError("refused while building")
    assert not os.path.exists(folder)


def test_a_pipeline_runs_when_its_block_ends_and_leaves_no_temporary_folder(tmp_path):
    out = tmp_path / "out.txt"
    with beam_pipeline(PipelineOptions(["--runner=DirectRunner"])) as pipeline:
        folder = pipeline.local_tempdir
        _ = pipeline | beam.Create([3]) | beam.Map(lambda value: out.write_text(str(value * 2)))
        assert not out.exists()  # Nothing runs before the block ends.
    assert out.read_text() == "6"
    assert not os.path.exists(folder)
