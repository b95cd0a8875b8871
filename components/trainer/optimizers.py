"""The optimizer and learning-rate schedule of a training run (`trainer.optimizer` in the config)."""

from __future__ import annotations

import keras
from keras import ops

from kflow.components.trainer.config import TrainConfig


class WarmUp(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warm-up from 0 to `after(0)` over `warmup_steps`, then `after(step - warmup_steps)`.

    In `keras.ops`, so that it runs inside any backend's train step (TensorFlow's graph, JAX's jit)."""

    def __init__(self, after, peak: float, warmup_steps: int):
        self.after = after
        self.peak = peak
        self.warmup_steps = warmup_steps

    def __call__(self, step):
        step = ops.cast(step, "float32")
        warm = self.peak * (step + 1.0) / float(max(self.warmup_steps, 1))
        rest = self.after(ops.maximum(step - self.warmup_steps, 0.0))
        return ops.where(step < self.warmup_steps, warm, rest)

    def get_config(self):
        return {"peak": self.peak, "warmup_steps": self.warmup_steps}


def learning_rate_schedule(config: TrainConfig, total_steps: int):
    """The configured schedule: constant, cosine or polynomial decay to 0 over the run, after a linear warm-up."""
    decay_steps = max(total_steps - config.warmup_steps, 1)
    if config.schedule == "cosine":
        after = keras.optimizers.schedules.CosineDecay(config.learning_rate, decay_steps)
    elif config.schedule == "polynomial":
        after = keras.optimizers.schedules.PolynomialDecay(config.learning_rate, decay_steps, end_learning_rate=0.0)
    else:
        if not config.warmup_steps:
            return config.learning_rate
        after = lambda step: ops.convert_to_tensor(config.learning_rate, "float32")  # noqa: E731
    if not config.warmup_steps:
        return after
    return WarmUp(after, config.learning_rate, config.warmup_steps)


def make_optimizer(config: TrainConfig, total_steps: int) -> keras.optimizers.Optimizer:
    rate = learning_rate_schedule(config, total_steps)
    if config.optimizer == "adamw":
        optimizer = keras.optimizers.AdamW(learning_rate=rate, weight_decay=config.weight_decay or 0.004)
    elif config.optimizer == "adam":
        optimizer = keras.optimizers.Adam(learning_rate=rate)
    else:
        optimizer = keras.optimizers.SGD(learning_rate=rate)
    if config.mixed_precision and keras.mixed_precision.global_policy().compute_dtype == "float16":
        optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
    return optimizer
