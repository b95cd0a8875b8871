"""The Tuner: a hyperparameter search whose trials are the Trainer's own training (docs/tuning.md)."""

from kflow.components.tuner.component import Tuner

__all__ = ["Tuner"]
