"""Image classification on the images ingest's Examples: MNIST's task on any size, channels and classes."""

from __future__ import annotations

import json
from typing import Any

import keras

from kflow.components.datasets.mnist.task import LABEL_FEATURE, MnistTask
from kflow.components.models import build_model
from kflow.components.util.schema import annotation_tags


class ImagesTask(MnistTask):
    """Classifies `image` (uint8, the schema's `shape=`) into `label`, whose class names the schema keeps."""

    name = "images"
    default_model = "image_convnet"  # mnist_convnet learns the 8×8 digits to 0.87 in 3 epochs, this one to 0.99.

    def __init__(self, schema, model_name: str | None = None, model_options: dict | None = None):
        super().__init__(schema, model_name, model_options)
        names = annotation_tags(schema, LABEL_FEATURE).get("class_names")
        self.class_names = json.loads(names) if names else [str(index) for index in range(self.num_classes)]

    def build_model(self) -> keras.Model:
        return build_model(
            self.model_name,
            num_classes=self.num_classes,
            image_shape=self.image_shape,
            **self.scaling(),
            **self.model_options,
        )

    def model_context(self) -> dict[str, Any]:
        return {**super().model_context(), "class_names": self.class_names}

    def serving_classes(self) -> list[str] | None:
        return list(self.class_names)

    def metric_options(self) -> dict[str, Any]:
        return {"class_names": self.class_names}
