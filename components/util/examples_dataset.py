"""tf.data input for image-classification Examples: TFRecord files → (uint8 images, int64 labels) batches.

Shared by the trainer and the evaluator. Records are parsed a batch at a time
(`tf.io.parse_example` on a batch is far faster than one record at a time).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import tensorflow as tf
from tensorflow_metadata.proto.v0 import schema_pb2

from kflow.components.util.schema import annotation_tags

MNIST_IMAGE_SHAPE = (28, 28)

# Records are parsed in batches of this size before they are cached; larger batches
# amortise the per-call cost of `parse_example` and `decode_raw`.
_PARSE_BATCH_SIZE = 1024


def make_dataset(
    files: Sequence[str],
    feature_spec: Mapping[str, tf.io.FixedLenFeature],
    *,
    batch_size: int,
    image_feature: str = "image",
    label_feature: str = "label",
    image_shape: Sequence[int] = MNIST_IMAGE_SHAPE,
    shuffle_buffer: int = 0,
    seed: int | None = None,
    cache: bool = True,
    repeat: bool = False,
) -> tf.data.Dataset:
    """A dataset of `(images, labels)` batches: uint8 `[batch, *image_shape]` and int64 `[batch]`.

    Images are stored as raw uint8 bytes (row-major) in `image_feature`.

    With `cache=True` the decoded records are kept in memory after the first pass
    and shuffled from there at every pass, so later epochs neither read nor parse.
    With `cache=False` the files are streamed (and the serialized records shuffled
    before parsing when `shuffle_buffer` is set), for splits that need not fit in memory.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    for name in (image_feature, label_feature):
        if name not in feature_spec:
            raise ValueError(f"feature {name!r} is not in the feature spec (features: {', '.join(feature_spec)})")
    spec = {image_feature: feature_spec[image_feature], label_feature: feature_spec[label_feature]}
    shape = [int(size) for size in image_shape]

    def parse(serialized: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        features = tf.io.parse_example(serialized, spec)
        images = tf.io.decode_raw(features[image_feature], tf.uint8)
        images = tf.reshape(images, [-1, *shape])
        labels = tf.reshape(tf.cast(features[label_feature], tf.int64), [-1])
        return images, labels

    records = tf.data.TFRecordDataset(list(files), compression_type="GZIP", num_parallel_reads=tf.data.AUTOTUNE)
    if cache:
        decoded = records.batch(_PARSE_BATCH_SIZE).map(parse, num_parallel_calls=tf.data.AUTOTUNE)
        decoded = decoded.unbatch().cache()
        if shuffle_buffer > 0:
            decoded = decoded.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True)
        dataset = decoded.batch(batch_size)
    else:
        if shuffle_buffer > 0:
            records = records.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True)
        dataset = records.batch(batch_size).map(parse, num_parallel_calls=tf.data.AUTOTUNE)
    if repeat:
        dataset = dataset.repeat()
    # As Keras does for in-memory arrays, skip tf.data's static graph rewrites, which this
    # pipeline does not need, and their cost of serializing the graph for each new iterator.
    options = tf.data.Options()
    options.experimental_optimization.apply_default_optimizations = False
    return dataset.prefetch(tf.data.AUTOTUNE).with_options(options)


def image_shape(schema: schema_pb2.Schema, image_feature: str = "image") -> tuple[int, ...]:
    """The shape of the raw uint8 images, from the feature's `shape=28,28` (and `dtype=uint8`) annotation tags."""
    tags = annotation_tags(schema, image_feature)
    if "shape" not in tags:
        raise ValueError(f"the schema's {image_feature!r} feature has no `shape=...` annotation tag")
    if tags.get("dtype", "uint8") != "uint8":
        raise ValueError(
            f"the {image_feature!r} feature must hold raw uint8 bytes; the schema says dtype={tags['dtype']}"
        )
    return tuple(int(size) for size in tags["shape"].split(","))
