"""The Quora Insincere Questions ingest component (ExampleGen-like)."""

from components.quora_ingest.component import QuoraIngest

__all__ = ["QuoraIngest"]
