"""A user's own component, as a user would write one: clips the MNIST Examples' pixel values."""

from __future__ import annotations

import json

from kflow.pipeline.dsl.artifacts import Examples
from kflow.pipeline.dsl.function_component import Input, Output, component


@component
def clip_pixels(examples: Input[Examples], clipped: Output[Examples], max_value: int = 255) -> dict:
    """Copies the Examples with every image pixel above `max_value` set to `max_value`."""
    import numpy as np
    import tensorflow as tf

    records = 0
    for split in examples.splits:
        target = clipped.split_uri(split)
        target.mkdir(parents=True)
        for source in sorted(examples.split_uri(split).glob("*.gz")):
            with tf.io.TFRecordWriter(str(target / source.name), options="GZIP") as writer:
                for serialized in tf.data.TFRecordDataset(str(source), compression_type="GZIP"):
                    example = tf.train.Example.FromString(serialized.numpy())
                    feature = example.features.feature["image"].bytes_list
                    pixels = np.minimum(np.frombuffer(feature.value[0], dtype=np.uint8), max_value)
                    feature.value[0] = pixels.astype(np.uint8).tobytes()
                    writer.write(example.SerializeToString())
                    records += 1
    stats = json.loads((examples.path / "stats.json").read_text())
    (clipped.path / "stats.json").write_text(json.dumps(stats, indent=2) + "\n")
    return {"records": records, "max_value": max_value}
