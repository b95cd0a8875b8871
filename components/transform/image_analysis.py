"""The image transform (MNIST, an image folder): the pixels' scaling, learnt from Split-train by Beam.

Each channel's pixel count, mean, variance, min and max (`pixels`, one streaming pass over the raw uint8 bytes)
and the label's training counts. The preprocessing model maps a channel's [min, max] onto [0, 1]
(`Rescaling(scale, offset)`, the per-channel constants as its arguments): for pixels that span 0..255 that is the
1/255 the convnets applied themselves before, so their metrics are unchanged; a channel that spans less is
stretched to the same range. A channel with one value over the whole split is shifted to 0, not divided by zero.
"""

from __future__ import annotations

from typing import Any

import keras

from kflow.components.transform.analyzers import Analyzer

PIXELS = "pixels.image"
LABELS = "label.counts"


def image_analyzers(task: Any) -> tuple[list[Analyzer], dict[str, str]]:
    channels = task.image_shape[2] if len(task.image_shape) == 3 else 1
    analyzers = [Analyzer(PIXELS, "pixels", "image", {"channels": channels}), Analyzer(LABELS, "counts", "label")]
    return analyzers, {"image": "image", "label": "label"}


def image_plan(task: Any, results: dict[str, Any]) -> dict[str, Any]:
    """{"image_shape", "scale", "offset", "label_counts", "train_examples", ...} from the results."""
    pixels = results[PIXELS]
    if not pixels["count"]:
        raise ValueError("the training split of the image Examples holds no image to learn the scaling from")
    scale, offset = [], []
    for low, high in zip(pixels["min"], pixels["max"], strict=True):
        spread = high - low
        scale.append(1.0 / spread if spread > 0 else 1.0)
        offset.append(-low / spread if spread > 0 else -low)
    counts = {str(label): count for label, count in results[LABELS]["ranked"]}
    return {
        "label": "label",
        "image_shape": list(task.image_shape),
        "scale": scale,
        "offset": offset,
        "label_counts": dict(sorted(counts.items(), key=lambda item: int(item[0]))),
        "train_examples": sum(counts.values()),
        "inputs": {"image": "uint8"},
        "left_out": {},
    }


def image_preprocessing(plan: dict[str, Any]) -> keras.Model:
    """Raw uint8 images in, float32 pixels in [0, 1] out (each channel's learnt range)."""
    image = keras.Input(shape=tuple(plan["image_shape"]), dtype="uint8", name="image")
    scale, offset = plan["scale"], plan["offset"]
    if len(plan["image_shape"]) == 2:  # one channel and no channel axis: the constants are scalars
        scale, offset = scale[0], offset[0]
    scaled = keras.layers.Rescaling(scale, offset, name="scaling")(image)
    return keras.Model(image, scaled, name="preprocessing")
