"""A regression's training loss on the label's standardised scale: `ScaledSquaredError`.

The squared error of predictions in the label's units, divided by the square of the training labels' standard
deviation. Adam moves the weights alike (its steps do not depend on the loss's scale), but its second moment, the
gradient squared, stays within float32: in the label's units a label of a standard deviation past ~3e9 squared it
past float32's 3.4e38, and every weight became NaN in the first epoch (dslabs' gapminder, `gdp` in dollars, std
7e11: `the trained model's weight hidden_0/kernel holds 13056 NaN or infinite value(s)`). The Evaluator's `loss`
stays the mean squared error in the label's units.
"""

from __future__ import annotations

from typing import Any

import keras


@keras.saving.register_keras_serializable(package="kflow")
class ScaledSquaredError(keras.losses.Loss):
    """((y_pred - y_true) / scale)², averaged over the last axis, as keras' MeanSquaredError is."""

    def __init__(self, scale: float = 1.0, name: str = "scaled_squared_error", **kwargs: Any):
        super().__init__(name=name, **kwargs)
        self.scale = float(scale) or 1.0

    def call(self, y_true: Any, y_pred: Any) -> Any:
        y_pred = keras.ops.convert_to_tensor(y_pred)
        y_true = keras.ops.cast(y_true, y_pred.dtype)
        return keras.ops.mean(keras.ops.square((y_pred - y_true) / self.scale), axis=-1)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "scale": self.scale}
