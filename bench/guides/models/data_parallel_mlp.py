"""trainer.module of keras_data_parallel.yaml: guide 003's model (keras-io, "Distributed training with Keras 3").

The guide's layers (Flatten, Dense 200 ReLU without bias, Dropout 0.4, Dense 10 softmax) over kflow's MNIST
batches: the model takes the raw uint8 [28, 28] images and scales them to 0..1 itself (the guide script does it
on the arrays).
"""

import keras


def build_model(schema, options):
    inputs = keras.Input(shape=(28, 28), dtype="uint8", name="image")
    x = keras.layers.Rescaling(1.0 / 255)(inputs)
    x = keras.layers.Flatten()(x)
    x = keras.layers.Dense(units=200, use_bias=False, activation="relu")(x)
    x = keras.layers.Dropout(0.4)(x)
    outputs = keras.layers.Dense(units=options.get("num_classes", 10), activation="softmax")(x)
    return keras.Model(inputs, outputs, name="guide_data_parallel_mlp")
