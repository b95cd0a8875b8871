"""`api.run`'s failures said once: a failed component is `api.PipelineFailed` naming it, and Beam's log of the
failing element (its traceback, at ERROR) stays quiet, as under `kflow run` (a Ctrl-C under `api.run` printed a
KeyboardInterrupt's whole traceback beside the `Cancelled` it raised)."""

from __future__ import annotations

import logging

import pytest

from tests.conftest import REPO

IRIS = REPO / "pipeline" / "configs" / "data" / "iris.csv"


def test_a_failed_component_is_pipeline_failed_and_beam_logs_no_traceback(tmp_path, caplog):
    from kflow.pipeline import api
    from kflow.pipeline.runners.beam_logs import BEAM_ELEMENT_LOGGERS

    (tmp_path / "broken.py").write_text("def build_model(schema, options):\n    raise ValueError('no model today')\n")
    ingest = api.CsvIngest("ingest", parameters={"source_path": str(IRIS), "label": "species"})
    train = api.Trainer("train", examples=ingest.outputs["examples"], schema=ingest.outputs["schema"],
                        parameters={"dataset": "csv", "epochs": 1, "module": str(tmp_path / "broken.py")})  # fmt: skip
    levels = [logging.getLogger(name).level for name in BEAM_ELEMENT_LOGGERS]
    with caplog.at_level(logging.DEBUG), pytest.raises(api.PipelineFailed) as failed:
        api.run(api.Pipeline("broken", [ingest, train]), tmp_path / "runs")
    assert "train" in str(failed.value) and "no model today" in str(failed.value)
    beam_said = [record for record in caplog.records if record.name.startswith("apache_beam.runners")]
    assert not [record for record in beam_said if record.exc_info or record.levelno >= logging.ERROR]
    assert [logging.getLogger(name).level for name in BEAM_ELEMENT_LOGGERS] == levels  # as they were after it
