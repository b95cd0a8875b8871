"""What a driver hands the shared ingest pipeline, recorded on the way (the pipeline then runs as usual)."""


def spy_on_chunks(monkeypatch, executor) -> dict:
    """After the executor module's run: {"chunks": the chunks its driver cut}."""
    seen = {}
    real_pipeline = executor.beam_ingest.run_ingest_pipeline

    def pipeline(**arguments):
        seen["chunks"] = arguments["chunks"]
        return real_pipeline(**arguments)

    monkeypatch.setattr(executor.beam_ingest, "run_ingest_pipeline", pipeline)
    return seen
