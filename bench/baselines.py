"""Plain baselines the benchmarks compare kflow with, outside any pipeline or component."""

from __future__ import annotations

import time
from pathlib import Path


def plain_fit(data: Path, records: int, epochs: int, batch_size: int) -> float:
    """Examples per second of a plain `model.fit` of the MNIST convnet on the first `records` images, in memory."""
    import keras
    import numpy as np

    from kflow.components.models.mnist_convnet import build_mnist_convnet

    with np.load(data / "mnist.npz") as arrays:
        x, y = arrays["x_train"][:records], arrays["y_train"][:records]
    keras.utils.set_random_seed(42)
    model = build_mnist_convnet()
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    started = time.perf_counter()
    model.fit(x, y, batch_size=batch_size, epochs=epochs, verbose=0)
    return len(x) * epochs / (time.perf_counter() - started)
