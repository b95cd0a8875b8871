"""The convnet of the Keras example `examples/vision/mnist_convnet.py`, for any image size and channels.

The model takes raw uint8 images and rescales them itself, so the exported
SavedModel serves the same bytes the Examples hold. Images smaller than
SMALL_IMAGE pixels a side keep their size through the convolutions ("same"
padding), where the example's unpadded ones would leave nothing to classify.
"""

from __future__ import annotations

import keras

IMAGE_SHAPE = (28, 28)
SMALL_IMAGE = 10

# keras_model_parallel's default LayoutMap: the convolutions' output channels sharded over `model`,
# the classifier on its (flattened) input dimension.
LAYOUT_MAP: dict[str, tuple[str | None, ...]] = {
    r"conv2d(_\d+)?/kernel": (None, None, None, "model"),
    r"probabilities/kernel": ("model", None),
}


def build_mnist_convnet(
    num_classes: int = 10, image_shape: tuple[int, ...] = IMAGE_SHAPE, scaling: keras.Model | None = None
) -> keras.Model:
    """Builds the (uncompiled) convnet: uint8 [batch, height, width(, channels)] in, class probabilities out.
    `scaling`: the Transform's preprocessing model (uint8 in, float pixels out) in place of the division by 255."""
    image_shape = tuple(image_shape)
    inputs = keras.Input(shape=image_shape, dtype="uint8", name="image")
    x = scaling(inputs) if scaling is not None else keras.layers.Rescaling(1.0 / 255)(inputs)
    if len(image_shape) == 2:
        x = keras.layers.Reshape((*image_shape, 1))(x)
    padding = "same" if min(image_shape[:2]) < SMALL_IMAGE else "valid"
    x = keras.layers.Conv2D(32, kernel_size=(3, 3), activation="relu", padding=padding)(x)
    x = keras.layers.MaxPooling2D(pool_size=(2, 2))(x)
    x = keras.layers.Conv2D(64, kernel_size=(3, 3), activation="relu", padding=padding)(x)
    x = keras.layers.MaxPooling2D(pool_size=(2, 2))(x)
    x = keras.layers.Flatten()(x)
    x = keras.layers.Dropout(0.5)(x)
    outputs = keras.layers.Dense(num_classes, activation="softmax", name="probabilities")(x)
    return keras.Model(inputs, outputs, name="mnist_convnet")
