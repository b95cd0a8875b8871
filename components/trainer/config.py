"""The training settings of the loop and its strategy: one JSON-serializable object, handed to worker processes too."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from kflow.components.trainer.strategies import get_strategy

OPTIMIZERS = ("adam", "adamw", "sgd")
SCHEDULES = ("constant", "cosine", "polynomial")


@dataclass
class TrainConfig:
    """Everything the loop needs besides the task and the artifacts (JSON-serializable, for worker processes)."""

    strategy: str = "default"
    epochs: int = 3
    batch_size: int = 128  # global
    steps_per_epoch: int | None = None
    optimizer: str = "adam"
    learning_rate: float = 0.001
    weight_decay: float = 0.0
    schedule: str = "constant"
    warmup_steps: int = 0
    mixed_precision: bool = False
    early_stopping_patience: int | None = None
    shuffle_buffer: int = 10000
    seed: int = 42
    checkpoint_every_steps: int | None = None
    log_every_steps: int = 100

    def validate(self) -> None:
        get_strategy(self.strategy)  # A ValueError naming the strategies otherwise.
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"unknown optimizer {self.optimizer!r}; choose one of {', '.join(OPTIMIZERS)}")
        if self.schedule not in SCHEDULES:
            raise ValueError(f"unknown learning-rate schedule {self.schedule!r}; choose one of {', '.join(SCHEDULES)}")
        for name in ("epochs", "batch_size", "steps_per_epoch", "checkpoint_every_steps", "log_every_steps"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name} must be at least 1, got {value}")
        if self.learning_rate <= 0:
            raise ValueError(f"learning_rate must be positive, got {self.learning_rate}")
        if self.weight_decay < 0 or self.warmup_steps < 0:
            raise ValueError("weight_decay and warmup_steps must not be negative")

    def to_json(self) -> dict[str, Any]:
        return asdict(self)
