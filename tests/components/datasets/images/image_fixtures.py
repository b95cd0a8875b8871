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


def write_two_size_digits(root: Path, per_class: int = 40, classes: tuple[int, ...] = (0, 1, 7)) -> Path:
    """scikit-learn's 8×8 digits of a few classes, upscaled as a folder of mixed cameras would hold them: two in three
    as 12×12 PNGs, the others as 16×16 JPEGs, in root/<digit>/; returns root. The most common size is 12×12."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    for digit in classes:
        folder = root / str(digit)
        folder.mkdir(parents=True, exist_ok=True)
        for index, pixels in enumerate(digits.images[digits.target == digit][:per_class]):
            image = Image.fromarray((pixels * 16).clip(0, 255).astype(np.uint8), "L")
            if index % 3 == 2:
                image.resize((16, 16), Image.Resampling.BILINEAR).save(folder / f"{index:03d}.jpg", quality=95)
            else:
                image.resize((12, 12), Image.Resampling.BILINEAR).save(folder / f"{index:03d}.png")
    return root
