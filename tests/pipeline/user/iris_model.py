"""A user's own Keras model for a csv classification task (trainer.module); its contract: docs/your-data.md.

Numeric features only (iris): they are filled and scaled with the statistics kflow computed on
the training split (`options["features"]`), then a small MLP with a custom layer of its own.
"""

import keras

HIDDEN_UNITS = 16


@keras.saving.register_keras_serializable(package="iris_user")
class Scale(keras.layers.Layer):
    """Standardises one column with fixed statistics; NaN (missing) becomes 0, the mean."""

    def __init__(self, mean, std, **kwargs):
        super().__init__(**kwargs)
        self.mean, self.std = float(mean), float(std)

    def call(self, inputs):
        scaled = (inputs - self.mean) / self.std
        return keras.ops.where(keras.ops.isnan(scaled), keras.ops.zeros_like(scaled), scaled)

    def get_config(self):
        return {**super().get_config(), "mean": self.mean, "std": self.std}


def build_model(schema, options):
    inputs, scaled = {}, []
    for feature in options["features"]:
        name = feature["name"]
        inputs[name] = keras.Input(shape=(1,), name=name, dtype="float32")
        scaled.append(Scale(feature["mean"], feature["variance"] ** 0.5, name=f"scale_{name}")(inputs[name]))
    x = keras.layers.Concatenate()(scaled)
    x = keras.layers.Dense(options.get("units", HIDDEN_UNITS), activation="relu")(x)
    outputs = keras.layers.Dense(len(options["head"]["classes"]), activation="softmax")(x)
    return keras.Model(inputs, outputs, name="iris_user_model")
