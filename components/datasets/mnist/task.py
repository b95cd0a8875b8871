"""MNIST digits: uint8 images and class-index labels from the mnist_ingest Examples."""

from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf

from kflow.components.datasets.task import Task
from kflow.components.models import build_model
from kflow.components.util.examples_dataset import image_shape, make_dataset
from kflow.components.util.schema import feature_spec, int_domain
from kflow.pipeline.dsl.artifacts import Examples

IMAGE_FEATURE = "image"
LABEL_FEATURE = "label"


class MnistTask(Task):
    """Classifies `image` into `label` (0..N-1 from the schema's label domain)."""

    name = "mnist"
    default_model = "mnist_convnet"
    monitor = "val_loss"
    monitor_mode = "min"

    def __init__(self, schema, model_name: str | None = None, model_options: dict | None = None):
        super().__init__(schema, model_name, model_options)
        self.spec = feature_spec(schema)
        self.image_shape = image_shape(schema, IMAGE_FEATURE)
        low, high = int_domain(schema, LABEL_FEATURE)
        if low != 0:
            raise ValueError(f"labels must be class indices starting at 0; the schema's label domain is {low}..{high}")
        self.num_classes = high + 1

    def dataset(
        self, examples: Examples, split: str, *, batch_size: int, training: bool, seed: int, shuffle_buffer: int = 0
    ) -> tf.data.Dataset:
        return make_dataset(
            examples.split_files(split),
            self.spec,
            batch_size=batch_size,
            image_feature=IMAGE_FEATURE,
            label_feature=LABEL_FEATURE,
            image_shape=self.image_shape,
            shuffle_buffer=shuffle_buffer if training else 0,
            seed=seed,
            cache=True,
        )

    def build_model(self) -> keras.Model:
        return build_model(self.model_name, num_classes=self.num_classes, **self.model_options)

    def model_context(self) -> dict[str, Any]:
        return {"num_classes": self.num_classes}

    def serving_classes(self) -> list[str] | None:
        return [str(digit) for digit in range(self.num_classes)]

    def loss(self) -> keras.losses.Loss:
        return keras.losses.SparseCategoricalCrossentropy(reduction=None)

    def metrics(self) -> list[keras.metrics.Metric]:
        return [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
