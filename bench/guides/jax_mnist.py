"""Guide 002 (keras-io, "Multi-GPU distributed training with JAX"): the MNIST convnet, an explicit jax.sharding loop.

As the guide: the convnet with batch normalisation and dropout (Rescaling; Conv 12 3x3 "same" without bias,
BN(scale=False), ReLU; Conv 24 6x6 stride 2 without bias, BN, ReLU; Conv 32 6x6 "same" stride 2, BN, ReLU;
global average pooling; Dense 256 ReLU; Dropout 0.5; Dense 10 logits), the 60,000 training images as float32
[28, 28, 1] in a tf.data pipeline batched by 64 with drop_remainder (no shuffling), Adam(1e-3), sparse
categorical cross-entropy from logits, 2 epochs of a jitted step over `model.stateless_call`,
`jax.value_and_grad` and `optimizer.stateless_apply`, with the train state replicated over a device mesh
(`NamedSharding(mesh, P())`) and each batch split over it (`P("batch")`); the state is written back into the
model at the end.

Adapted to this machine: 2 XLA host (CPU) devices (XLA_FLAGS=--xla_force_host_platform_device_count) in place
of the GPUs; the data from ../shared/datasets/mnist/mnist.npz in place of keras.datasets' download. The guide
stops after training; here the trained model is then scored on MNIST's 10,000 test images (the split kflow's
evaluator scores), outside the timed training phase. `jax.debug.visualize_array_sharding` (needs `rich`) is
replaced by printing the batch's sharding. The loop waits for step k-1 once step k is dispatched: the guide's
unbounded dispatch deadlocks XLA's CPU all-reduce between 2 host devices on this 2-core machine: 3 of its 4 runs
aborted at the rendezvous timeout (2 more of 2 with JAX's CPU async dispatch off or single-threaded Eigen), 0 of 4
with the wait, at the same speed (1,303-1,465 ex/s; the unbounded run that finished 1,463); gdb showed device 0's
all-reduce waiting for device 1, whose part the dispatching thread never launched.

Prints one JSON line at the end: {"guide", "wall_s", "train_s", "examples_per_s", "metric": "accuracy", "value"}.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402  (first: starts the clock, standard library only)

GUIDE = "jax_mnist"


def get_model():
    """The guide's convnet (logits out)."""
    import keras

    inputs = keras.Input(shape=(28, 28, 1))
    x = keras.layers.Rescaling(1.0 / 255.0)(inputs)
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
    outputs = keras.layers.Dense(10)(x)
    return keras.Model(inputs, outputs)


def get_datasets(data: Path, max_records: int | None):
    """The guide's float32 [28, 28, 1] images (not yet scaled: the model's Rescaling does it) as tf.data."""
    import numpy as np
    import tensorflow as tf

    x_train, y_train, x_test, y_test = common.load_mnist(data, max_records)
    x_train = np.expand_dims(x_train.astype("float32"), -1)
    x_test = np.expand_dims(x_test.astype("float32"), -1)
    print("x_train shape:", x_train.shape, f"{len(x_train)} train samples, {len(x_test)} test samples")
    train_data = tf.data.Dataset.from_tensor_slices((x_train, y_train))
    return train_data, (x_test, y_test)


def main() -> int:
    args = common.parser(__doc__, data=common.DATASETS / "mnist", epochs=2).parse_args()
    batch_size = 64
    common.force_host_devices(args.devices)
    common.seed(args.seed)

    import jax
    import keras
    import numpy as np
    from jax.experimental import mesh_utils
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    train_data, (x_test, y_test) = get_datasets(args.data, args.max_records)
    train_data = train_data.batch(batch_size, drop_remainder=True)

    model = get_model()
    optimizer = keras.optimizers.Adam(1e-3)
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    one_batch, _ = next(iter(train_data))
    model.build(one_batch)
    optimizer.build(model.trainable_variables)

    def compute_loss(trainable_variables, non_trainable_variables, x, y):
        y_pred, updated_non_trainable = model.stateless_call(
            trainable_variables, non_trainable_variables, x, training=True
        )
        return loss(y, y_pred), updated_non_trainable

    compute_gradients = jax.value_and_grad(compute_loss, has_aux=True)

    @jax.jit
    def train_step(train_state, x, y):
        trainable_variables, non_trainable_variables, optimizer_variables = train_state
        (loss_value, non_trainable_variables), grads = compute_gradients(
            trainable_variables, non_trainable_variables, x, y
        )
        trainable_variables, optimizer_variables = optimizer.stateless_apply(
            optimizer_variables, grads, trainable_variables
        )
        return loss_value, (trainable_variables, non_trainable_variables, optimizer_variables)

    def get_replicated_train_state(devices):
        replicated = NamedSharding(Mesh(devices, axis_names=("_",)), P())  # no axis named: every device
        # The variables' values: this JAX (0.10) no longer takes Keras variables in device_put, as the guide's did.
        return tuple(
            jax.device_put([variable.value for variable in variables], replicated)
            for variables in (model.trainable_variables, model.non_trainable_variables, optimizer.variables)
        )

    num_devices = len(jax.local_devices())
    print(f"Running on {num_devices} devices: {jax.local_devices()}")
    devices = mesh_utils.create_device_mesh((num_devices,))
    data_sharding = NamedSharding(Mesh(devices, axis_names=("batch",)), P("batch"))
    x, _ = next(iter(train_data))
    print("Data sharding:", jax.device_put(x.numpy(), data_sharding).sharding)

    train_state = get_replicated_train_state(devices)
    steps, loss_value = 0, None
    started = time.perf_counter()
    for epoch in range(args.epochs):
        for x, y in train_data:
            sharded_x = jax.device_put(x.numpy(), data_sharding)
            previous = loss_value
            loss_value, train_state = train_step(train_state, sharded_x, y.numpy())
            if previous is not None:  # one step ahead at most: see the docstring
                previous.block_until_ready()
            steps += 1
        print("Epoch", epoch, "loss:", loss_value)  # printing waits for the last step
    train_s = time.perf_counter() - started

    trainable_variables, non_trainable_variables, _ = train_state
    for variable, value in zip(model.trainable_variables, trainable_variables, strict=True):
        variable.assign(value)
    for variable, value in zip(model.non_trainable_variables, non_trainable_variables, strict=True):
        variable.assign(value)

    logits = model.predict(x_test, batch_size=1000, verbose=0)
    accuracy = float(np.mean(np.argmax(logits, axis=-1) == y_test))
    print(f"test accuracy {accuracy:.4f} on {len(y_test)} images")
    common.report(
        GUIDE,
        train_s=train_s,
        examples=steps * batch_size,
        metric="accuracy",
        value=accuracy,
        test_examples=len(y_test),
        devices=num_devices,
        epochs=args.epochs,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
