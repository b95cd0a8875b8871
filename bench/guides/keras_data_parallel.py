"""Guide 003 (keras-io, "Distributed training with Keras 3"): `keras.distribution.DataParallel` on JAX.

As the guide's DataParallel example: a 1-D `DeviceMesh` over the devices (axis "data"), `DataParallel(
device_mesh=...)` set as the distribution before the model is built; the model Input(28, 28, 1) -> Flatten ->
Dense 200 ReLU without bias -> Dropout 0.4 -> Dense 10 softmax; `compile` with Keras' default optimizer
(RMSprop, learning rate 1e-3); a tf.data dataset batched by 16 (no shuffling); `model.fit(dataset, epochs=3)`,
then an evaluation.

Adapted: the guide trains on 128 random normal "images" against random normal 10-vectors with a mean squared
error, which measures nothing; here the same model trains on MNIST (the shape its Input has): the 60,000
training images / 255, with sparse categorical cross-entropy on the digit labels (the loss of a 10-way softmax
classifier), and is scored on MNIST's 10,000 test images (the split kflow's evaluator scores) instead of the
training data. 2 XLA host (CPU) devices (XLA_FLAGS=--xla_force_host_platform_device_count) in place of
`jax.devices("gpu")`; the data from ../shared/datasets/mnist/mnist.npz. The guide's ModelParallel/LayoutMap
section is not part of this run.

Prints one JSON line at the end: {"guide", "wall_s", "train_s", "examples_per_s", "metric": "accuracy", "value"}.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402  (first: starts the clock, standard library only)

GUIDE = "keras_data_parallel"
BATCH_SIZE = 16


def get_model():
    """The guide's model."""
    import keras
    from keras import layers

    inputs = layers.Input(shape=(28, 28, 1))
    y = layers.Flatten()(inputs)
    y = layers.Dense(units=200, use_bias=False, activation="relu")(y)
    y = layers.Dropout(0.4)(y)
    y = layers.Dense(units=10, activation="softmax")(y)
    return keras.Model(inputs=inputs, outputs=y)


def batches(x, y, devices: int):
    """The guide's `from_tensor_slices(...).batch(16)` and the records it holds; a last partial batch that does
    not split evenly over the devices is dropped (the guide's 128 records never leave one; MNIST's 60,000 and
    10,000 images do not either)."""
    from tensorflow import data as tf_data

    remainder = len(x) % BATCH_SIZE
    drop = bool(remainder % devices)
    dataset = tf_data.Dataset.from_tensor_slices((x, y)).batch(BATCH_SIZE, drop_remainder=drop)
    return dataset, len(x) - remainder * drop


def main() -> int:
    args = common.parser(__doc__, data=common.DATASETS / "mnist", epochs=3).parse_args()
    common.force_host_devices(args.devices)
    common.seed(args.seed)

    import jax
    import keras
    import numpy as np

    x_train, y_train, x_test, y_test = common.load_mnist(args.data, args.max_records)
    x_train = np.expand_dims(x_train.astype("float32") / 255, -1)
    x_test = np.expand_dims(x_test.astype("float32") / 255, -1)

    devices = jax.devices("cpu")
    mesh_1d = keras.distribution.DeviceMesh(shape=(len(devices),), axis_names=["data"], devices=devices)
    data_parallel = keras.distribution.DataParallel(device_mesh=mesh_1d)
    dataset, train_count = batches(x_train, y_train, len(devices))
    keras.distribution.set_distribution(data_parallel)

    model = get_model()
    model.compile(loss="sparse_categorical_crossentropy")  # the guide's compile: loss only, default optimizer
    started = time.perf_counter()
    history = model.fit(dataset, epochs=args.epochs, verbose=2)
    train_s = time.perf_counter() - started

    test, test_count = batches(x_test, y_test, len(devices))
    probabilities = model.predict(test, verbose=0)
    labels = y_test[:test_count]
    accuracy = float(np.mean(np.argmax(probabilities, axis=-1) == labels))
    print(f"test accuracy {accuracy:.4f} on {len(labels)} images")
    common.report(
        GUIDE,
        train_s=train_s,
        examples=train_count * len(history.epoch),
        metric="accuracy",
        value=accuracy,
        test_examples=len(labels),
        devices=len(devices),
        epochs=len(history.epoch),
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
