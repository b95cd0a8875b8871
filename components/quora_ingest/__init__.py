"""The Quora Insincere Questions ingest component (ExampleGen-like)."""

from kflow.components.quora_ingest.component import QuoraIngest

__all__ = ["QuoraIngest"]
