"""The BulkInferrer component (the executor is imported by the runner, by path)."""

from kflow.components.bulk_inferrer.component import BulkInferrer

__all__ = ["BulkInferrer"]
