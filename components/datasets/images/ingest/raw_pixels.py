"""Images a table keeps as their pixels, not encoded: a list of numbers (TFX's MNIST example writes `image_floats`,
784 values in [0, 1]) or the raw bytes of a uint8 array (`image_raw` beside `height` and `width`, as TensorFlow's
old MNIST converter wrote them). The shape is the record's height and width features where it has them, else a
square: n values are √n×√n grey, or √(n/3)×√(n/3) RGB. Numbers in [0, 1] (the first record's) are scaled to 0-255.
Each image is handed to the converter as a PNG, so it is sized and coloured as an image file is.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass, replace
from typing import Any

HEIGHTS = ("height", "image/height", "rows", "image_height")
WIDTHS = ("width", "image/width", "cols", "image_width")


@dataclass(frozen=True)
class RawPixels:
    column: str
    shape: tuple[int, int, int]  # height, width, channels (the first record's: what sizes are sampled by)
    scale: float  # 255.0 for numbers in [0, 1] (decided over the sampled records: with_scale), else 1.0
    sizes: tuple[str, str] | None = None  # the height and width columns where the records hold them

    @classmethod
    def find(cls, row: dict[str, Any]) -> RawPixels | None:
        """The column of a record that holds an image's pixels, the largest such, or None."""
        found = []
        for name, value in row.items():
            named = any(word in name.lower() for word in ("image", "img", "pixel"))
            numbers = isinstance(value, list) and bool(value) and all(isinstance(v, int | float) for v in value)
            if not (numbers or named and isinstance(value, bytes)):  # raw bytes only where named as an image
                continue
            shape = _shape(len(value), row)
            if shape is not None:
                scale = 255.0 if numbers and max(value) <= 1.0 else 1.0
                sizes = _size_columns(row)
                found.append((named, math.prod(shape), cls(name, shape, scale, sizes)))
        return max(found, key=lambda candidate: candidate[:2], default=(None, None, None))[2]

    @property
    def mode(self) -> str:
        return "L" if self.shape[2] == 1 else "RGB"

    @property
    def columns(self) -> tuple[str, ...]:
        """The columns a record's image is read from."""
        return (self.column, *(self.sizes or ()))

    def with_scale(self, largest: float, numbers: bool) -> RawPixels:
        """The table's scale from its sampled records' largest value: numbers up to 1 are in [0, 1] (a first record
        that is all black said so alone)."""
        return replace(self, scale=255.0 if numbers and largest <= 1.0 else 1.0)

    def encoded(self, value: Any, row: dict[str, Any] | None = None) -> bytes | None:
        """A PNG of the record's pixels, in its own height and width where it holds them; None when they fill no
        image of that shape."""
        import numpy as np
        from PIL import Image

        values = np.frombuffer(value, np.uint8) if isinstance(value, bytes) else np.asarray(value, np.float64)
        shape = _shape(values.size, row or {}) if self.sizes and isinstance(value, bytes | list) else self.shape
        if not isinstance(value, bytes | list) or shape is None or values.size != math.prod(shape):
            return None
        pixels = np.clip(np.round(values * self.scale), 0, 255).astype(np.uint8)
        height, width, channels = shape
        image = Image.fromarray(pixels.reshape((height, width) if channels == 1 else (height, width, channels)))
        out = io.BytesIO()
        image.save(out, format="PNG", compress_level=1)
        return out.getvalue()


def _size_columns(row: dict[str, Any]) -> tuple[str, str] | None:
    height = next((name for name in HEIGHTS if isinstance(row.get(name), int)), None)
    width = next((name for name in WIDTHS if isinstance(row.get(name), int)), None)
    return (height, width) if height and width else None


def _shape(count: int, row: dict[str, Any]) -> tuple[int, int, int] | None:
    """(height, width, channels) of `count` values: the record's height and width where they divide it into 1 or 3
    channels, else a square grey or RGB image of at least 4×4."""
    height = next((row[name] for name in HEIGHTS if isinstance(row.get(name), int)), None)
    width = next((row[name] for name in WIDTHS if isinstance(row.get(name), int)), None)
    if height and width and count in (height * width, 3 * height * width):
        return height, width, count // (height * width)
    for channels in (1, 3):
        side = math.isqrt(count // channels)
        if count % channels == 0 and side * side * channels == count and side >= 4:
            return side, side, channels
    return None
