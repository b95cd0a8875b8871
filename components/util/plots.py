"""Minimal PNG plots without a plotting library: line plots and heat maps drawn into numpy pixels.

The plots carry no text (there is no font renderer); report.html gives each its title,
axes and legend. Colours of the series, in order: blue, orange, green, red.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

COLOURS = [(31, 119, 180), (255, 127, 14), (44, 160, 44), (214, 39, 40)]
WIDTH, HEIGHT, MARGIN = 480, 360, 30


def write_png(pixels: np.ndarray, path: Path) -> None:
    """Writes an RGB uint8 [height, width, 3] array as a PNG file."""
    height, width, _ = pixels.shape
    raw = b"".join(b"\x00" + pixels[row].astype(np.uint8).tobytes() for row in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
    )


def line_plot(series: Sequence[tuple[Sequence[float], Sequence[float]]], path: Path) -> None:
    """Draws each (xs, ys) series as a polyline over the union of their ranges, with axes at the minima."""
    pixels = np.full((HEIGHT, WIDTH, 3), 255, dtype=np.uint8)
    xs_all = np.concatenate([np.asarray(xs, np.float64) for xs, _ in series])
    ys_all = np.concatenate([np.asarray(ys, np.float64) for _, ys in series])
    finite = np.isfinite(xs_all) & np.isfinite(ys_all)
    x_low, x_high = xs_all[finite].min(), xs_all[finite].max()
    y_low, y_high = ys_all[finite].min(), ys_all[finite].max()
    x_span, y_span = (x_high - x_low) or 1.0, (y_high - y_low) or 1.0

    def to_pixels(xs, ys):
        columns = MARGIN + (np.asarray(xs, np.float64) - x_low) / x_span * (WIDTH - 2 * MARGIN)
        rows = HEIGHT - MARGIN - (np.asarray(ys, np.float64) - y_low) / y_span * (HEIGHT - 2 * MARGIN)
        return columns, rows

    pixels[HEIGHT - MARGIN, MARGIN : WIDTH - MARGIN] = 0  # x axis
    pixels[MARGIN : HEIGHT - MARGIN, MARGIN] = 0  # y axis
    for index, (xs, ys) in enumerate(series):
        columns, rows = to_pixels(xs, ys)
        colour = COLOURS[index % len(COLOURS)]
        for (c0, r0), (c1, r1) in zip(
            zip(columns, rows, strict=True), zip(columns[1:], rows[1:], strict=True), strict=False
        ):
            steps = int(max(abs(c1 - c0), abs(r1 - r0))) + 1
            for t in np.linspace(0.0, 1.0, steps + 1):
                column, row = int(round(c0 + t * (c1 - c0))), int(round(r0 + t * (r1 - r0)))
                pixels[max(row - 1, 0) : row + 1, max(column - 1, 0) : column + 1] = colour
        if len(columns) == 1:
            row, column = int(rows[0]), int(columns[0])
            pixels[row - 2 : row + 2, column - 2 : column + 2] = colour
    write_png(pixels, path)


def heatmap(matrix: np.ndarray, path: Path, cell: int = 32) -> None:
    """A [rows, columns] matrix as square cells, white (0) to dark blue (the largest value)."""
    matrix = np.asarray(matrix, np.float64)
    scale = matrix / matrix.max() if matrix.max() > 0 else matrix
    # Each cell: blend white → (8, 48, 107); a one-pixel grey grid between cells.
    colour = np.array([255.0, 255.0, 255.0]) + scale[..., None] * (np.array([8.0, 48.0, 107.0]) - 255.0)
    pixels = np.repeat(np.repeat(colour, cell, axis=0), cell, axis=1).astype(np.uint8)
    pixels[::cell, :] = 200
    pixels[:, ::cell] = 200
    write_png(pixels, path)
