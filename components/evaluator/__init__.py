"""The Evaluator component (the executor is imported by the runner, by path)."""

from kflow.components.evaluator.component import Evaluator

__all__ = ["Evaluator"]
