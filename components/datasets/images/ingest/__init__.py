"""The image ingest component (ImportExampleGen-like for image files)."""

from kflow.components.datasets.images.ingest.component import ImagesIngest

__all__ = ["ImagesIngest"]
