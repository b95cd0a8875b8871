"""Guide 004 (keras-io, "Multi-GPU and distributed training"): MirroredStrategy and `fit` on MNIST.

As the guide's end-to-end example: a 2-layer densely-connected network (784 -> Dense 256 ReLU -> Dense 256
ReLU -> Dense 10 logits) built and compiled inside `MirroredStrategy().scope()` with Adam() (learning rate
1e-3), sparse categorical cross-entropy from logits and sparse categorical accuracy; the images flattened to
784 float32 values / 255, the labels float32; the last 10,000 training images held out for validation;
tf.data datasets batched by 32 (no shuffling); `model.fit(train, epochs=2, validation_data=val)`, then
`model.evaluate(test)`.

Adapted to this machine: the CPU split into 2 logical devices (`tf.config.set_logical_device_configuration`)
and the strategy built over them, in place of the GPUs `MirroredStrategy()` finds by default; the data from
../shared/datasets/mnist/mnist.npz. With --max-records the validation share stays the guide's (1/6 of the
training images). The guide's fault-tolerance (ModelCheckpoint) and multi-worker sections are not part of
this run.

Prints one JSON line at the end: {"guide", "wall_s", "train_s", "examples_per_s", "metric": "accuracy", "value"}.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402  (first: starts the clock, standard library only)

GUIDE = "mirrored_mnist"
NUM_VAL_SAMPLES = 10000  # of the guide's 60,000 training images


def get_compiled_model():
    """The guide's 2-layer densely-connected network, compiled."""
    import keras

    inputs = keras.Input(shape=(784,))
    x = keras.layers.Dense(256, activation="relu")(inputs)
    x = keras.layers.Dense(256, activation="relu")(x)
    outputs = keras.layers.Dense(10)(x)
    model = keras.Model(inputs, outputs)
    model.compile(
        optimizer=keras.optimizers.Adam(),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=[keras.metrics.SparseCategoricalAccuracy()],
    )
    return model


def get_dataset(data: Path, max_records: int | None):
    import tensorflow as tf

    batch_size = 32
    x_train, y_train, x_test, y_test = common.load_mnist(data, max_records)
    x_train = x_train.reshape(-1, 784).astype("float32") / 255
    x_test = x_test.reshape(-1, 784).astype("float32") / 255
    y_train = y_train.astype("float32")
    y_test = y_test.astype("float32")
    num_val_samples = round(len(x_train) * NUM_VAL_SAMPLES / 60000)
    x_val, y_val = x_train[-num_val_samples:], y_train[-num_val_samples:]
    x_train, y_train = x_train[:-num_val_samples], y_train[:-num_val_samples]
    return (
        tf.data.Dataset.from_tensor_slices((x_train, y_train)).batch(batch_size),
        tf.data.Dataset.from_tensor_slices((x_val, y_val)).batch(batch_size),
        tf.data.Dataset.from_tensor_slices((x_test, y_test)).batch(batch_size),
        (len(x_train), len(x_test)),
    )


def main() -> int:
    args = common.parser(__doc__, data=common.DATASETS / "mnist", epochs=2).parse_args()
    devices = common.logical_cpus(args.devices)
    common.seed(args.seed)

    import tensorflow as tf

    strategy = tf.distribute.MirroredStrategy(devices)
    print(f"Number of devices: {strategy.num_replicas_in_sync}")
    with strategy.scope():
        model = get_compiled_model()

    train_dataset, val_dataset, test_dataset, (train_count, test_count) = get_dataset(args.data, args.max_records)
    started = time.perf_counter()
    history = model.fit(train_dataset, epochs=args.epochs, validation_data=val_dataset, verbose=2)
    train_s = time.perf_counter() - started
    results = model.evaluate(test_dataset, verbose=2, return_dict=True)
    common.report(
        GUIDE,
        train_s=train_s,
        examples=train_count * len(history.epoch),
        metric="accuracy",
        value=results["sparse_categorical_accuracy"],
        test_examples=test_count,
        devices=strategy.num_replicas_in_sync,
        epochs=len(history.epoch),
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
