"""Encoded images told by their first bytes (PNG, JPEG, GIF, BMP, TIFF, WebP), where a table keeps them: a bytes
value, or a struct's `bytes` (Hugging Face's `{bytes, path}`). The images ingest reads such tables; the tabular
ingests refuse them, pointing there."""

from __future__ import annotations

from typing import Any

# First bytes of the encoded images Pillow reads (a WebP is RIFF....WEBP).
MAGIC = {b"\x89PNG": "PNG", b"\xff\xd8\xff": "JPEG", b"GIF8": "GIF", b"BM": "BMP", b"II*\x00": "TIFF",
         b"MM\x00*": "TIFF", b"RIFF": "WebP"}  # fmt: skip


def encoded_bytes(value: Any) -> bytes | None:
    """The encoded image of a table's cell: bytes, or a struct's `bytes`; None when it holds none."""
    if isinstance(value, dict):
        value = value.get("bytes")
    return bytes(value) if isinstance(value, bytes | bytearray) and value else None


def image_kind(value: Any) -> str | None:
    """The encoded image format a cell's bytes start with, where Pillow reads its header so (`BM` alone starts
    "BMW 320i" as it starts a BMP), else None."""
    data = encoded_bytes(value)
    if data is None:
        return None
    head = data[:12]
    kind = next((name for magic, name in MAGIC.items() if head.startswith(magic)), None)
    if kind is None or (kind == "WebP" and head[8:12] != b"WEBP"):
        return None
    import io

    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)):  # the header only: no pixels decoded
            return kind
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError):
        return None


def looks_like_pixels(name: str, values: list) -> bool:
    """Whether a column's list of numbers is an image's pixels, not an embedding: named as an image (image, img,
    pixel), its values all from 0 to 255 (whole) or from 0 to 1."""
    if not any(word in name.lower() for word in ("image", "img", "pixel")) or not values:
        return False
    if not all(isinstance(value, int | float) and not isinstance(value, bool) for value in values):
        return False
    low, high = min(values), max(values)
    whole = all(float(value).is_integer() for value in values)
    return low >= 0 and (high <= 1 or (whole and high <= 255))


def square_image(count: int, smallest: int = 8) -> str | None:
    """'28×28' or '32×32×3' where `count` values fill a square grey or RGB image of at least `smallest` pixels a
    side (a table's column of an image's pixels, as they look), else None."""
    import math

    for channels in (1, 3):
        side = math.isqrt(count // channels)
        if count % channels == 0 and side * side * channels == count and side >= smallest:
            return f"{side}×{side}" + ("×3" if channels == 3 else "")
    return None
