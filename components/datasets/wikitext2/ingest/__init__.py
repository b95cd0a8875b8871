"""The WikiText-2 ingest component (ExampleGen-like)."""

from kflow.components.datasets.wikitext2.ingest.component import WikiText2Ingest

__all__ = ["WikiText2Ingest"]
