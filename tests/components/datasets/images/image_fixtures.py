"""scikit-learn's 8×8 digits (shipped with scikit-learn, no download) written as PNG files, a folder per class."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image


def write_digits(root: Path, limit: int | None = None) -> Path:
    """The 1,797 digits as 8-bit grey PNGs under root/<digit>/<index>.png; returns root."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    for index, (image, label) in enumerate(zip(digits.images[:limit], digits.target[:limit], strict=True)):
        folder = root / str(label)
        folder.mkdir(parents=True, exist_ok=True)
        Image.fromarray((image * 16).clip(0, 255).astype(np.uint8), "L").save(folder / f"{index:04d}.png")
    return root


def truncate(path: Path) -> Path:
    """Cuts an image file in the middle of its data, as an interrupted copy leaves it."""
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return path
