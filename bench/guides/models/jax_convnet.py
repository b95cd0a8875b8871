"""trainer.module of jax_mnist.yaml: guide 002's convnet (keras-io, "Multi-GPU distributed training with JAX").

The guide's layers, over kflow's MNIST batches: the model takes the raw uint8 [28, 28] images kflow's Examples
hold (the guide feeds float32 [28, 28, 1]; its Rescaling makes both 0..1) and ends in a softmax, as kflow's
MNIST task trains on probabilities (sparse categorical cross-entropy); the guide's last Dense gives logits to a
cross-entropy `from_logits=True`: the same function and loss, the softmax moved into the model.
"""

import keras


def build_model(schema, options):
    inputs = keras.Input(shape=(28, 28), dtype="uint8", name="image")
    x = keras.layers.Rescaling(1.0 / 255.0)(inputs)
    x = keras.layers.Reshape((28, 28, 1))(x)
    x = keras.layers.Conv2D(filters=12, kernel_size=3, padding="same", use_bias=False)(x)
    x = keras.layers.BatchNormalization(scale=False, center=True)(x)
    x = keras.layers.ReLU()(x)
    x = keras.layers.Conv2D(filters=24, kernel_size=6, use_bias=False, strides=2)(x)
    x = keras.layers.BatchNormalization(scale=False, center=True)(x)
    x = keras.layers.ReLU()(x)
    x = keras.layers.Conv2D(filters=32, kernel_size=6, padding="same", strides=2, name="large_k")(x)
    x = keras.layers.BatchNormalization(scale=False, center=True)(x)
    x = keras.layers.ReLU()(x)
    x = keras.layers.GlobalAveragePooling2D()(x)
    x = keras.layers.Dense(256, activation="relu")(x)
    x = keras.layers.Dropout(0.5)(x)
    outputs = keras.layers.Dense(options.get("num_classes", 10), activation="softmax")(x)
    return keras.Model(inputs, outputs, name="guide_jax_convnet")
