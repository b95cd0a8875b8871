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


def plain_fit_on(backend: str, data: Path, records: int, epochs: int, batch_size: int) -> float:
    """`plain_fit` on a Keras backend, in a fresh process as a user's script runs: Keras fixes its backend at
    import, and a process that already trained (kflow's Trainer in this one) has its heap set up otherwise
    (components/trainer/heap.py)."""
    import os
    import subprocess
    import sys

    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); from pathlib import Path; from baselines import plain_fit; "
        "print(plain_fit(Path(sys.argv[2]), *map(int, sys.argv[3:])))"
    )
    bench = str(Path(__file__).resolve().parent)
    env = dict(os.environ, KERAS_BACKEND=backend, TF_CPP_MIN_LOG_LEVEL="3")
    arguments = [sys.executable, "-c", code, bench, str(data), str(records), str(epochs), str(batch_size)]
    result = subprocess.run(arguments, env=env, capture_output=True, text=True, check=True)
    return float(result.stdout.strip().splitlines()[-1])
