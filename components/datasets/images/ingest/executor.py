"""The image ingest executor: a folder of class folders (or a manifest) in, uint8 image Examples split three ways.

The driver lists the files and the classes (source.py) and hands the Beam workers chunks of CHUNK_FILES file names.
A worker decodes each file with Pillow, converts it to the declared channels and size (`data.image`; unset: grey
only if every image of a sample over the files is, and the sample's most common size) and writes an Example as
MNIST's: `image` (the raw uint8 pixels, row-major), `label` (the class index) and `key` (the file's path under the
source). Reasons an image is refused (position: its path, or the manifest line), the first that applies:

    invalid: missing_label (a manifest row without one), missing_file, outside_source (the file, once its links
             are followed, is outside the source folder: a link to elsewhere, a manifest path that is absolute or
             climbs out with ../), not_a_file (a FIFO, device or socket: refused without waiting on it),
             not_an_image (Pillow does not know the bytes: a text file named .png), too_large (more than
             MAX_IMAGE_PIXELS pixels, read from the header before any decoding), truncated (the file ends inside
             the image data), corrupt (other decoding errors), unsupported_depth (32-bit integer or float pixels
             outside 0..255, which no scaling makes 8-bit without a guess), wrong_mode (convert: false and another
             colour mode), wrong_size (fit: exact and another size)
    filtered: not_an_image_name (a folder's file whose extension is no image format's, or that has none: a
             README, an .svg, a Thumbs.db; left out unread, as Keras' image_dataset_from_directory leaves them)

Transparent pixels are composited onto data.image.background (white unless told) before any conversion.

16-bit grey images (PNG's 16-bit greyscale, Pillow's I;16 modes) are scaled to 8 bits by keeping the high byte
(value >> 8: 0..65535 onto 0..255, every 8-bit level the same width), not clipped at 255.

Split: stratified by class; each class's images ordered by a hash of their path and cut by quota.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import PurePath
from typing import Any

from kflow.components.datasets.bundle import SPLIT_WITH_TEST
from kflow.components.datasets.images.ingest.image_format import (
    BACKGROUNDS,
    Headers,
    ImageFormat,
    bounded,
    sampled_headers,
    shared_size,
    upright,
)
from kflow.components.datasets.images.ingest.source import (
    UNLABELLED,
    ImageFile,
    RefusedFile,
    checked_classes,
    list_images,
    named_images,
    open_source,
)
from kflow.components.datasets.images.ingest.table_images import (
    LABEL_OF_A_TABLE,
    TableImageConverter,
    TableImages,
    table_kind,
)
from kflow.components.ingest.ingest_job import IngestJob
from kflow.components.ingest.ingest_records import FILTERED, INVALID, make_reject
from kflow.components.ingest.split_plan import FolderSplitPlan, StratifiedPlan
from kflow.components.ingest.tfds_source import chunks as tfds_chunks
from kflow.components.util.example_proto import Example

log = logging.getLogger(__name__)

CHUNK_FILES = 1000
# The reason a folder's file whose name is no image's is left out (filtered, not invalid: it was never data).
NOT_AN_IMAGE_NAME = "not_an_image_name"
GREY_MODES = frozenset({"1", "L", "LA", "I", "I;16", "I;16B", "I;16L", "F"})
SIXTEEN_BIT_MODES = frozenset({"I;16", "I;16B", "I;16L", "I;16N"})
# The most pixels an image may have (its header says how many before anything is decoded): 50 megapixels, a
# 8660×5773 photo, about 150 MB decoded as RGB. A larger one is `too_large`: training images are resized to far
# less, and a small file of a huge image (a PNG of one colour) would take gigabytes to decode. Pillow's own
# decompression-bomb limit (about 179 megapixels before it refuses) is far above what a worker should hold.
MAX_IMAGE_PIXELS = 50_000_000


def run(
    *,
    image: dict[str, Any] | None = None,
    tfds: dict[str, Any] | None = None,
    label: str | None = None,
    **parameters: Any,
) -> dict[str, Any]:
    """Ingests the images (`parameters`: an IngestJob's); returns {"read": N, "<split>": n, ..., "rejected": r,
    "invalid": i, "filtered": 0}."""
    job = IngestJob(**parameters)
    if job.source_format == "tfds":
        return _run_tfds(job, ImageFormat.from_options(image), tfds)
    labelled = job.source_format != UNLABELLED  # else images to score (kflow predict): no classes, one split
    if kind := table_kind(job.source_path, job.source_format):
        return _run_table(job, ImageFormat.from_options(image), kind, label, labelled)
    if label is not None:
        raise ValueError(LABEL_OF_A_TABLE)
    split = job.split_shares(SPLIT_WITH_TEST, ("train", "eval", "test") if labelled else ())
    image_format = ImageFormat.from_options(image)
    files = list_images(job.source_path, job.source_format)[: job.max_records]
    images = named_images(files, job.source_path)
    classes = checked_classes(images, job.source_path) if labelled else []
    plan = _plan(images, split)
    # The sampled files' headers, read once for what data.image leaves unset: the channels and the size.
    headers = sampled_headers(images) if image_format.channels is None or image_format.height is None else None
    channels = image_format.channels or _inferred_channels(headers)
    image_format = image_format.with_size(images, headers)  # size unset: the most common size, said in the log.
    shown = ", ".join(classes[:10]) + (", ..." if len(classes) > 10 else "")
    log.info(
        "images ingest: %d files %s; made %s, %s", len(images),
        f"of {len(classes)} classes ({shown})" if labelled else "to score",
        "×".join(map(str, image_format.shape(channels))), image_format.fit,
    )  # fmt: skip
    job.schema.path.mkdir(parents=True, exist_ok=True)
    job.schema.file.write_text(image_schema(image_format.shape(channels), classes if labelled else None, image_format))
    chunks = [tuple(files[start : start + CHUNK_FILES]) for start in range(0, len(files), CHUNK_FILES)]
    return job.write(
        chunks=chunks,
        process_chunk=ImageConverter(image_format, channels, {name: index for index, name in enumerate(classes)}),
        splits=tuple(split),
        read=len(files),
        plan=plan,
    )


def _plan(files: list[ImageFile], split: dict[str, int]) -> StratifiedPlan:
    """Stratified by class over `data.split`; a source with split folders keeps them, and cuts the splits it lacks
    from its train folder by the same shares."""
    given = {file.split for file in files} - {None}
    if not given:
        return StratifiedPlan(dict(split))
    counts = Counter(file.split for file in files)
    cut = [name for name in split if name != "train" and name not in given]
    log.info(
        "images ingest: the source's own splits: %s%s", ", ".join(f"{name} {counts[name]}" for name in sorted(given)),
        f"; {', '.join(cut)} cut from train by data.split {dict(split)}" if cut else "",
    )  # fmt: skip
    return FolderSplitPlan(dict(split), frozenset(given - {"train"}))


def _run_tfds(job: IngestJob, image_format: ImageFormat, options: dict[str, Any] | None) -> dict[str, Any]:
    """The images of a prepared TFDS dataset (tfds_images.py), each of its splits as `data.tfds.splits` names them."""
    from kflow.components.datasets.images.ingest import tfds_images

    dataset = tfds_images.TfdsImages.open(job.source_path, options)
    if len(dataset.classes) < 2:
        raise ValueError(f"data.tfds.name: {dataset.source.name}'s {dataset.label} has {len(dataset.classes)} class")
    sizes = dataset.sizes(job.max_records)
    channels = image_format.channels or dataset.channels()
    if image_format.height is None:
        height, width = bounded(*dataset.common_size(sizes["train"], image_format.fit))
        image_format = replace(image_format, height=height, width=width)
    shape = image_format.shape(channels)
    log.info(
        "images ingest: tfds %s (%s: image, %s: %d classes), %s; made %s, %s", dataset.source.name, dataset.image,
        dataset.label, len(dataset.classes), sizes, "×".join(map(str, shape)), image_format.fit,
    )  # fmt: skip
    job.schema.path.mkdir(parents=True, exist_ok=True)
    job.schema.file.write_text(image_schema(shape, list(dataset.classes), image_format))
    converter = ImageConverter(image_format, channels, {name: index for index, name in enumerate(dataset.classes)})
    return job.write(
        chunks=tfds_chunks(sizes, dataset.options, CHUNK_FILES),
        process_chunk=tfds_images.TfdsImageConverter(dataset, converter),
        splits=tuple(sizes),
        read=sum(sizes.values()),
    )


def _run_table(job: IngestJob, image_format: ImageFormat, kind: str, label: str | None, labelled: bool) -> dict:
    """The images of a TFRecord or Parquet table (table_images.py), split by data.split's shares per class."""
    table = TableImages.open(job.source_path, kind, label, labelled)
    split = job.split_shares(SPLIT_WITH_TEST, ("train", "eval", "test") if labelled else ())
    channels = image_format.channels or channels_of(table.modes.elements())
    if image_format.height is None:
        sampled = f"{table.sizes.total()} images sampled (of {table.records})"
        height, width = bounded(*shared_size(table.sizes, sampled, image_format.fit))
        image_format = replace(image_format, height=height, width=width)
    shape = image_format.shape(channels)
    log.info(
        "images ingest: %s %s (%s: image%s), %d records; made %s, %s", kind, job.source_path, table.image,
        f", {table.label}: {len(table.classes)} classes" if labelled else "", table.records,
        "×".join(map(str, shape)), image_format.fit,
    )  # fmt: skip
    job.schema.path.mkdir(parents=True, exist_ok=True)
    job.schema.file.write_text(image_schema(shape, list(table.classes) if labelled else None, image_format))
    chunks = table.chunks(job.max_records)
    converter = ImageConverter(image_format, channels, {name: index for index, name in enumerate(table.classes)})
    return job.write(
        chunks=chunks,
        process_chunk=TableImageConverter(table, converter),
        splits=tuple(split),
        read=sum(stop - start for _, start, stop, _ in chunks),
        plan=StratifiedPlan(dict(split)),
    )


def _inferred_channels(headers: Headers) -> int:
    """data.image.channels when not given: 1 when every image of a sample over the whole listing (its `headers`)
    is grey, else 3 (`channels_of`). The first image alone decided before: a folder of colour photos whose first
    file was grey became grey."""
    modes = Counter(mode for _, mode in headers.values())
    colour = {mode: count for mode, count in modes.items() if mode not in GREY_MODES}
    channels = channels_of(modes)
    said = ", ".join(f"{mode} {count}" for mode, count in modes.most_common())
    why = f"{sum(colour.values())} of the {modes.total()} files sampled are in colour" if colour else (
        f"all {modes.total()} files sampled are grey")  # fmt: skip
    log.info("images ingest: data.image.channels not set: %d, as %s (%s)", channels, why, said)
    return channels


def channels_of(modes: Iterable[str]) -> int:
    """1 when every one of the images' colour `modes` is grey, else 3: a grey image made RGB keeps all it has, a
    colour one made grey does not."""
    return 1 if all(mode in GREY_MODES for mode in modes) else 3


def image_schema(shape: tuple[int, ...], classes: list[str] | None, image_format: ImageFormat | None = None) -> str:
    """The TFMD schema (text) of the Examples: MNIST's features, the size and the class names from the data, and how
    the images were made (`image_format`: fit, background, convert, which the model's copy of the schema carries to
    `kflow predict`); for images to score (`classes` None), no label, and the key (each image's path) tagged
    role=key."""
    from google.protobuf import text_format
    from tensorflow_metadata.proto.v0 import schema_pb2

    proto = schema_pb2.Schema()
    features = [("image", schema_pb2.BYTES), ("label", schema_pb2.INT), ("key", schema_pb2.BYTES)]
    for name, kind in features if classes is not None else [features[0], features[2]]:
        feature = proto.feature.add(name=name, type=kind)
        feature.presence.min_fraction, feature.presence.min_count = 1.0, 1
        feature.value_count.min = feature.value_count.max = 1
    image_tags = ["image", f"shape={','.join(map(str, shape))}", "dtype=uint8"]
    image_tags += image_format.recorded() if image_format is not None else []
    proto.feature[0].annotation.tag.extend(image_tags)
    if classes is None:
        proto.feature[1].annotation.tag.extend(["role=key", "kflow_type=string"])
        return text_format.MessageToString(proto)
    label = proto.feature[1]
    label.int_domain.min, label.int_domain.max, label.int_domain.is_categorical = 0, len(classes) - 1, True
    label.annotation.tag.extend(["role=label", "task=classification", f"class_names={json.dumps(classes)}"])
    return text_format.MessageToString(proto)


@dataclass(frozen=True)
class ImageConverter:
    """Decodes, converts and serialises the images of a chunk; refuses the others with their reason."""

    image_format: ImageFormat
    channels: int
    classes: dict[str, int]

    def __call__(self, chunk: tuple[ImageFile, ...]) -> tuple[list, list]:
        accepted, found = [], []
        for file in chunk:
            pixels, problem = self.pixels(file)
            if problem is not None:
                reason, details = problem
                kind = FILTERED if reason == NOT_AN_IMAGE_NAME else INVALID
                found.append(make_reject(reason, kind, file.position, {"path": file.path, "label": file.label},
                                         **details))  # fmt: skip
                continue
            example = Example()
            features = example.features.feature
            features["image"].bytes_list.value.append(pixels)
            if file.label is not None:
                features["label"].int64_list.value.append(self.classes[file.label])
            features["key"].bytes_list.value.append(file.position.encode("utf-8"))
            group = f"{file.split}/{file.label}" if file.split else file.label or ""  # FolderSplitPlan's groups
            accepted.append((file.position, group, example.SerializeToString(deterministic=True)))
        return accepted, found

    def pixels(self, file: ImageFile) -> tuple[bytes | None, tuple[str, dict] | None]:
        """The image's uint8 pixels in the declared format, or why not: (reason, details)."""
        if not file.named:
            return None, (NOT_AN_IMAGE_NAME, {"suffix": PurePath(file.path).suffix})
        if file.label is not None and file.label not in self.classes:  # None: an image to score
            return None, ("missing_label", {})
        if not file.path:
            return None, ("missing_file", {"error": "the manifest row has no path"})
        try:
            with open_source(file) as handle:
                return self.decoded(handle)
        except RefusedFile as refused:
            return None, (refused.reason, {"error": refused.error})
        except FileNotFoundError as error:
            return None, ("missing_file", {"error": str(error)})
        except OSError as error:  # A file that cannot be opened (permissions, I/O): as broken image data.
            return None, ("corrupt", {"error": str(error)})

    def decoded(self, handle: Any) -> tuple[bytes | None, tuple[str, dict] | None]:
        """The pixels of the encoded image `handle` reads (a file, or a TFDS record's bytes), or why not."""
        import numpy as np
        from PIL import Image, UnidentifiedImageError

        wanted = "L" if self.channels == 1 else "RGB"
        try:
            with Image.open(handle) as opened:
                if opened.width * opened.height > MAX_IMAGE_PIXELS:  # From the header: nothing decoded yet.
                    error = f"{opened.width}×{opened.height} pixels, more than kflow's limit of {MAX_IMAGE_PIXELS}"
                    return None, ("too_large", {"error": error, "size": [opened.height, opened.width]})
                opened.load()
                if opened.mode != wanted and not self.image_format.convert:
                    return None, ("wrong_mode", {"mode": opened.mode, "expected_mode": wanted})
                image, depth = eight_bits(upright(opened))
                if depth is not None:
                    return None, ("unsupported_depth", {"mode": opened.mode, "error": depth})
                image = flattened(image, BACKGROUNDS[self.image_format.background])
                image = image if image.mode == wanted else image.convert(wanted)
                image = self.fitted(image)
        except UnidentifiedImageError:
            return None, ("not_an_image", {"error": _unrecognised(handle)})
        except Image.DecompressionBombError as error:
            return None, ("too_large", {"error": str(error)})
        except (OSError, SyntaxError, ValueError) as error:  # What Pillow raises for broken image data.
            reason = "truncated" if "truncated" in str(error) else "corrupt"
            return None, (reason, {"error": str(error)})
        if image is None:
            return None, ("wrong_size", {"size": list(opened.size[::-1]), "expected_size": self._size()})
        return np.asarray(image, dtype=np.uint8).tobytes(), None

    def fitted(self, image: Any) -> Any:
        """The image at the declared size (None: a wrong size under fit: exact)."""
        from PIL import Image

        width, height = self.image_format.width, self.image_format.height
        if image.size == (width, height):
            return image
        if self.image_format.fit == "exact":
            return None
        if self.image_format.fit == "resize":
            return image.resize((width, height), Image.Resampling.BILINEAR)
        scale = min(width / image.width, height / image.height)
        inner = (max(1, round(image.width * scale)), max(1, round(image.height * scale)))
        canvas = Image.new(image.mode, (width, height), 0)
        canvas.paste(
            image.resize(inner, Image.Resampling.BILINEAR), ((width - inner[0]) // 2, (height - inner[1]) // 2)
        )
        return canvas

    def _size(self) -> list[int]:
        return [self.image_format.height, self.image_format.width]


ALPHA_MODES = frozenset({"RGBA", "RGBa", "LA", "La", "PA"})


def flattened(image: Any, background: tuple[int, int, int, int]) -> Any:
    """The image composited onto `background` where it is transparent (an alpha channel, or a palette's or colour
    key's transparent entry). Converted to RGB or grey as it is, the transparency would be dropped and whatever
    colour lies under it kept: an icon drawn in one colour with its shape in the alpha channel (617 of Adwaita's
    994 48×48 icons) became a blank square."""
    from PIL import Image

    if image.mode not in ALPHA_MODES and "transparency" not in image.info:
        return image
    return Image.alpha_composite(Image.new("RGBA", image.size, background), image.convert("RGBA"))


def eight_bits(image: Any) -> tuple[Any, str | None]:
    """(the image with 8-bit channels, None), or (None, why not). Pillow's convert("L") clips wider values at 255,
    which turns a 16-bit image into a mostly white one: 16-bit grey keeps its high byte (value >> 8); 32-bit
    integer and float images are taken as they are when their values lie within 0..255, refused otherwise (their
    range is not known: 12-bit in 16, 0..1 floats, ...)."""
    import numpy as np
    from PIL import Image

    if image.mode in SIXTEEN_BIT_MODES:
        values = np.asarray(image).astype(np.uint16)
        return Image.fromarray((values >> 8).astype(np.uint8), "L"), None
    if image.mode in ("I", "F"):
        values = np.asarray(image)
        low, high = (float(values.min()), float(values.max())) if values.size else (0.0, 0.0)
        if low < 0 or high > 255:
            return None, f"{image.mode} pixels from {low:g} to {high:g}: not 8-bit values, and their depth is unknown"
        return Image.fromarray(values.astype(np.uint8), "L"), None
    return image, None


def _unrecognised(handle: Any) -> str:
    """Why Pillow read no image from `handle`: an empty file (a copy or a download cut short, a placeholder), or
    bytes of no image format it knows."""
    try:
        empty = handle.seek(0, 2) == 0
    except (AttributeError, OSError, ValueError):
        empty = False
    return "the file is empty (0 bytes)" if empty else "Pillow does not recognise the file as an image"
