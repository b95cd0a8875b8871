"""trainer.module of mirrored_mnist.yaml: guide 004's 2-layer densely-connected network (keras-io, "Multi-GPU
and distributed training").

The guide's layers, over kflow's MNIST batches: the model takes the raw uint8 [28, 28] images and flattens and
scales them itself (the guide does `reshape(-1, 784) / 255` on the arrays), and ends in a softmax, as kflow's
MNIST task trains on probabilities; the guide's last Dense gives logits to a cross-entropy `from_logits=True`:
the same function and loss, the softmax moved into the model.
"""

import keras


def build_model(schema, options):
    inputs = keras.Input(shape=(28, 28), dtype="uint8", name="image")
    x = keras.layers.Rescaling(1.0 / 255)(inputs)
    x = keras.layers.Flatten()(x)
    x = keras.layers.Dense(256, activation="relu")(x)
    x = keras.layers.Dense(256, activation="relu")(x)
    outputs = keras.layers.Dense(options.get("num_classes", 10), activation="softmax")(x)
    return keras.Model(inputs, outputs, name="guide_dense_mnist")
