"""Run by test_fit_scan.py in a JAX process (`python -m tests.components.trainer.fit_scan_check DEVICES`): the
same model fitted from the same weights on the same batches by Keras' own loop of 4 steps a call and by kflow's
calls over blocks of 4 batches (components/trainer/fit_scan.py), scanned, step by step and timed (some calls each
way, then one); prints one JSON line of what each ended with."""

from __future__ import annotations

import json
import sys

import keras
import numpy as np
import tensorflow as tf

from kflow.components.trainer import fit_scan

STEPS, BATCH, EPOCHS = 4, 16, 3  # 9 calls: the timed fit runs 3 step by step, 3 scanned, then its choice


def fitted(way: str, devices: int, data: tf.data.Dataset, steps_per_epoch: int) -> dict:
    keras.utils.set_random_seed(7)  # the same initial weights and dropout draws for both fits
    if devices > 1:
        keras.distribution.set_distribution(keras.distribution.DataParallel(devices=keras.distribution.list_devices()))
    inputs = keras.Input((12,), name="x")
    hidden = keras.layers.Dropout(0.3)(keras.layers.Dense(32, activation="relu")(inputs))
    model = keras.Model(inputs, keras.layers.Dense(3, activation="softmax")(hidden))
    model.compile("adam", "sparse_categorical_crossentropy", weighted_metrics=["accuracy"], steps_per_execution=STEPS)
    if way != "keras":
        fit_scan.run_block_calls(model, data.element_spec, STEPS, None if way == "timed" else way)
        data = fit_scan.blocks(data, STEPS)
    history = model.fit(data, epochs=EPOCHS, steps_per_epoch=steps_per_epoch, verbose=0)
    return {
        "losses": history.history["loss"],
        "accuracy": history.history["accuracy"],
        "steps": int(model.optimizer.iterations.numpy()),
        "weights": [np.asarray(weight).tolist() for weight in model.get_weights()],
        "train_function": type(model.train_function).__name__,
        "chosen": getattr(getattr(model.train_function, "choice", None), "chosen", None),
    }


def main() -> None:
    devices = int(sys.argv[1])
    rng = np.random.default_rng(0)
    x = rng.normal(size=(400, 12)).astype("float32")
    y = (x[:, 0] > 0).astype("int32") + (x[:, 1] > 0.5).astype("int32")
    weight = rng.uniform(0.5, 1.5, size=400).astype("float32")
    data = tf.data.Dataset.from_tensor_slices((x, y, weight)).repeat().batch(BATCH, drop_remainder=True)
    steps_per_epoch = 12  # 3 calls an epoch
    fits = {way: fitted(way, devices, data, steps_per_epoch) for way in ("keras", "scan", "steps", "timed")}
    # Where the Trainer reads blocks: (steps a call, processes, data-parallel replicas).
    fits["scans"] = [fit_scan.scans(*case) for case in ((4, 1, 2), (3, 1, 2), (4, 2, 2), (1, 1, 1), (3, 1, 1))]
    print(json.dumps(fits))


if __name__ == "__main__":
    main()
