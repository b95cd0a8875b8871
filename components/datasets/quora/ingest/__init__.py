"""The Quora Insincere Questions ingest component (ExampleGen-like)."""

from kflow.components.datasets.quora.ingest.component import QuoraIngest

__all__ = ["QuoraIngest"]
