"""What a driver hands the shared ingest pipeline, recorded on the way (the pipeline then runs as usual)."""

from kflow.components.ingest import beam_ingest


def spy_on_chunks(monkeypatch) -> dict:
    """After an ingest executor's run: {"chunks": the chunks its driver cut}."""
    seen = {}
    real_pipeline = beam_ingest.run_ingest_pipeline

    def pipeline(**arguments):
        seen["chunks"] = arguments["chunks"]
        return real_pipeline(**arguments)

    monkeypatch.setattr(beam_ingest, "run_ingest_pipeline", pipeline)
    return seen
