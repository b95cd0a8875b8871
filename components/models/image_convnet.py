"""A larger image classifier than MNIST's convnet: blocks of two batch-normalised 3×3 convolutions, halving
the size between blocks while it is at least 2 pixels, then global average pooling (any size and channels).

Takes raw uint8 images and rescales them itself, as mnist_convnet, so the served model reads the Examples' bytes.
"""

from __future__ import annotations

import keras

LAYOUT_MAP: dict[str, tuple[str | None, ...]] = {
    r"conv2d(_\d+)?/kernel": (None, None, None, "model"),
    r"probabilities/kernel": ("model", None),
}


def build_image_convnet(
    num_classes: int,
    image_shape: tuple[int, ...],
    filters: tuple[int, ...] = (32, 64, 128),
    dropout: float = 0.3,
    scaling: keras.Model | None = None,
) -> keras.Model:
    """Builds the (uncompiled) model: uint8 [batch, height, width(, channels)] in, class probabilities out.
    `scaling`: the Transform's preprocessing model (uint8 in, float pixels out) in place of the division by 255."""
    image_shape = tuple(image_shape)
    inputs = keras.Input(shape=image_shape, dtype="uint8", name="image")
    x = scaling(inputs) if scaling is not None else keras.layers.Rescaling(1.0 / 255)(inputs)
    if len(image_shape) == 2:
        x = keras.layers.Reshape((*image_shape, 1))(x)
    size = min(image_shape[:2])
    for block, width in enumerate(filters):
        for _ in range(2):
            x = keras.layers.Conv2D(width, 3, padding="same", use_bias=False)(x)
            x = keras.layers.BatchNormalization(momentum=0.8)(x)  # Keras' 0.99 lags short trainings: 36 steps here.
            x = keras.layers.Activation("relu")(x)
        if block < len(filters) - 1 and size >= 2:
            x = keras.layers.MaxPooling2D(2)(x)
            size //= 2
    x = keras.layers.GlobalAveragePooling2D()(x)
    x = keras.layers.Dropout(dropout)(x)
    outputs = keras.layers.Dense(num_classes, activation="softmax", name="probabilities")(x)
    return keras.Model(inputs, outputs, name="image_convnet")
