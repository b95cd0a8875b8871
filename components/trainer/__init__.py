"""The Trainer component (the executor is imported by the runner, by path)."""

from kflow.components.trainer.component import Trainer

__all__ = ["Trainer"]
