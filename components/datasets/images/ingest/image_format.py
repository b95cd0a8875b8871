"""What every image of an images dataset becomes (`data.image`: `ImageFormat`), and, without a declared size, the
size inferred from a sample of the files' headers (`common_size`: the most common size, or the median height and
width where sizes vary; bounded by INFERRED_SIDE). The files themselves
are listed and opened by source.py; a worker decodes and converts (executor.py)."""

from __future__ import annotations

import logging
import statistics
from collections import Counter
from dataclasses import dataclass, replace
from typing import Any

from kflow.components.datasets.images.ingest.source import ImageFile, open_source

log = logging.getLogger(__name__)

FITS = ("resize", "pad", "exact")
IMAGE_OPTIONS = ("size", "channels", "fit", "convert", "background")
RECORDED = ("fit", "background", "convert")  # what the schema records beside the shape (ImageFormat.recorded)
# What shows through an image's transparent pixels (executor.flattened), as RGBA: white, as a page or an image
# viewer shows them (on Adwaita's 48×48 icons, 10 epochs, seeds 42, 1, 2: test accuracy 0.55-0.68 on white, 0.54-0.55 on
# black; 0.55 with the transparency dropped, seed 42).
BACKGROUNDS = {"white": (255, 255, 255, 255), "black": (0, 0, 0, 255)}


# EXIF's orientation tag: how a camera held sideways or upside down stored its pixels (1: as shown; 2-8: mirrored
# and/or turned; 5-8 turned a quarter). Phones store a portrait photo's pixels sideways with this tag, and viewers
# turn it upright; Keras' image loading and tf.io.decode_jpeg do not, so a folder of phone photos trained sideways.
ORIENTATION = 0x0112


def orientation(image: Any) -> int:
    """The image's EXIF orientation (from its header: nothing decoded), 1 when it has none or it is unreadable."""
    try:
        value = int(image.getexif().get(ORIENTATION, 1))
    except Exception:  # noqa: BLE001 - a broken EXIF block is no orientation; the pixels may still decode
        return 1
    return value if 1 <= value <= 8 else 1


def shown_size(image: Any) -> tuple[int, int]:
    """(height, width) of the image as viewers show it (`orientation`), from its header."""
    width, height = image.size
    return (width, height) if orientation(image) >= 5 else (height, width)


def upright(image: Any) -> Any:
    """The image as viewers show it: turned and mirrored as its EXIF orientation says, else itself (no copy)."""
    from PIL import ImageOps

    return ImageOps.exif_transpose(image) if orientation(image) > 1 else image


@dataclass(frozen=True)
class ImageFormat:
    """What every image becomes: `height`×`width` pixels of `channels` (1: grey, 3: RGB) uint8 values.

    fit: resize (stretched to the size), pad (scaled to fit inside, keeping its shape, then centred on black),
    exact (an image of another size is rejected: wrong_size). convert: false rejects an image whose mode is not
    the channels' (wrong_mode) instead of converting it. background: what transparent pixels become (BACKGROUNDS)."""

    height: int | None  # None (with width): no size given; the driver infers one (common_size) before converting.
    width: int | None
    channels: int | None = None  # None: 1 if every image of a sample over the files is grey, else 3.
    fit: str = "resize"
    convert: bool = True
    background: str = "white"

    @classmethod
    def from_options(cls, options: Any) -> ImageFormat:
        """The format of `data.image` (None or {}: every option inferred or at its default)."""
        options = {} if options is None else options
        if not isinstance(options, dict):
            raise ValueError(f"data.image: a mapping such as {{size: [28, 28]}} (height, width), got {options!r}")
        unknown = sorted(set(options) - set(IMAGE_OPTIONS))
        if unknown:
            raise ValueError(f"data.image: unknown options {unknown} (allowed: {', '.join(IMAGE_OPTIONS)})")
        size = options.get("size")
        if isinstance(size, int) and not isinstance(size, bool):
            size = [size, size]
        if size is None:
            size = [None, None]
        elif not (isinstance(size, list) and len(size) == 2 and all(_positive(side) for side in size)):
            raise ValueError(f"data.image.size: [height, width] (or one number for a square) in pixels, got {size!r}")
        channels = options.get("channels")
        if channels not in (None, 1, 3):
            raise ValueError(f"data.image.channels: 1 (grey) or 3 (RGB), got {channels!r}")
        fit = options.get("fit", "resize")
        if fit not in FITS:
            raise ValueError(f"data.image.fit: one of {', '.join(FITS)}, got {fit!r}")
        convert = options.get("convert", True)
        if not isinstance(convert, bool):
            raise ValueError(f"data.image.convert: true or false, got {convert!r}")
        background = options.get("background", "white")
        if background not in BACKGROUNDS:
            raise ValueError(f"data.image.background: one of {', '.join(BACKGROUNDS)}, got {background!r}")
        return cls(size[0], size[1], channels, fit, convert, background)

    def shape(self, channels: int) -> tuple[int, ...]:
        """The stored shape: [height, width] for grey (as MNIST's), [height, width, 3] for RGB."""
        if self.height is None or self.width is None:
            raise ValueError("data.image.size: not inferred yet (ImageFormat.with_size)")
        return (self.height, self.width) if channels == 1 else (self.height, self.width, channels)

    def with_size(self, files: list[ImageFile], headers: Headers | None = None) -> ImageFormat:
        """This format, its size inferred from the files (common_size, within INFERRED_SIDE) when `data.image` gives
        none."""
        if self.height is not None:
            return self
        height, width = bounded(*common_size(files, self.fit, headers))
        return replace(self, height=height, width=width)

    def recorded(self) -> list[str]:
        """How every image was made beyond its shape, as the schema's `image` feature records it (annotation tags,
        beside `shape=`): the schema goes with the trained model (assets/schema.pbtxt), and `kflow predict` makes new
        images the same way (`recorded_options`)."""
        return [f"fit={self.fit}", f"background={self.background}", f"convert={str(self.convert).lower()}"]


def recorded_options(tags: dict[str, str]) -> dict[str, Any]:
    """The data.image options the schema's `image` feature tags record (`ImageFormat.recorded`): {} for Examples made
    before they were recorded (or MNIST's pixels, never fitted)."""
    options: dict[str, Any] = {name: tags[name] for name in RECORDED if name in tags}
    if "convert" in options:
        options["convert"] = options["convert"] == "true"
    return options


# The longest side an inferred size keeps (Keras' image_dataset_from_directory makes every image 256×256 unless told):
# a folder of phone photos (4032×3024) would otherwise make 37 MB Examples and a model whose cost grows with the area.
INFERRED_SIDE = 256


def bounded(height: int, width: int) -> tuple[int, int]:
    """(height, width) scaled down, keeping their ratio, so that neither passes INFERRED_SIDE; said in the log."""
    longest = max(height, width)
    if longest <= INFERRED_SIDE:
        return height, width
    scale = INFERRED_SIDE / longest
    smaller = max(1, round(height * scale)), max(1, round(width * scale))
    log.info(
        "images ingest: %d×%d is larger than an inferred size may be (%d pixels a side, as Keras' default): %d×%d, "
        "the same shape; set data.image.size to keep more",
        height, width, INFERRED_SIDE, *smaller,
    )  # fmt: skip
    return smaller


# Images whose size is read (their header only) when data.image.size is not set: spread over the whole listing, so
# that every class folder is seen, not only the first one's files. A few hundred headers take well under a second.
SIZE_SAMPLE = 200


def common_size(files: list[ImageFile], fit: str = "resize", headers: Headers | None = None) -> tuple[int, int]:
    """(height, width): the size shared by up to SIZE_SAMPLE files taken evenly over `files` (shared_size: the
    most common one, or the median height and width where no size is half of them; `headers`: theirs, when read
    already). Logs it. ValueError when none of them is an image."""
    headers = headers or sampled_headers(files)
    sizes = Counter(size for size, _ in headers.values())
    return shared_size(sizes, f"{len(headers)} files sampled (of {len(files)})", fit)


Headers = dict[str, tuple[tuple[int, int], str]]  # {position: ((height, width), colour mode)}


def sampled_headers(files: list[ImageFile]) -> Headers:
    """{position: ((height, width), colour mode)} of up to SIZE_SAMPLE files taken evenly over `files`, from their
    headers (no pixels decoded); files Pillow cannot read are left to the worker to reject. ValueError when none of
    them is an image."""
    from PIL import Image

    step = max(1, len(files) // SIZE_SAMPLE)
    sample = [file for file in files[::step][:SIZE_SAMPLE] if file.path]
    headers = {}
    for file in sample:
        try:
            with open_source(file) as handle, Image.open(handle) as opened:
                headers[file.position] = (shown_size(opened), opened.mode)
        except Exception:  # noqa: BLE001 - an unreadable file is the worker's to reject (with its reason); skip it.
            continue
    if not headers:
        raise ValueError(f"data.source.path: none of the {len(sample)} sampled files is an image Pillow reads")
    return headers


def shared_size(sizes: Counter[tuple[int, int]], sampled: str, fit: str) -> tuple[int, int]:
    """The size the sampled `sizes` share: the most common one where at least half of them have it (a dataset of
    one size, with a few strays; ties: the first seen), else their median height and width (photos of every size,
    where the most common size was a few images' or the first one's: one panorama made a folder 500×120), said in the
    log with how many had it."""
    (height, width), count = sizes.most_common(1)[0]
    others = {"resize": "resized to it", "pad": "scaled and padded to it", "exact": "rejected (fit: exact)"}[fit]
    if 2 * count >= sizes.total():
        log.info(
            "images ingest: data.image.size not set: %d×%d (height×width), the most common size: %d of the %s have "
            "it; images of another size are %s",
            height, width, count, sampled, others,
        )  # fmt: skip
        return height, width
    each = [size for size, times in sizes.items() for _ in range(times)]
    median = round(statistics.median(h for h, _ in each)), round(statistics.median(w for _, w in each))
    log.info(
        "images ingest: data.image.size not set: %d×%d (height×width), the median height and width of the %s: "
        "their sizes vary (%d sizes; the most common, %d×%d, only %d of them); images of another size are %s",
        *median, sampled, len(sizes), height, width, count, others,
    )  # fmt: skip
    return median


def _positive(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0
