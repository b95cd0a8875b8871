"""The Predictor component (the executor is imported by the runner, by path)."""

from kflow.components.predictor.component import Predictor

__all__ = ["Predictor"]
