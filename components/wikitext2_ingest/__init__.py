"""The WikiText-2 ingest component (ExampleGen-like)."""

from kflow.components.wikitext2_ingest.component import WikiText2Ingest

__all__ = ["WikiText2Ingest"]
