"""MNIST digits: uint8 images and class-index labels from the mnist_ingest Examples."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import keras
import tensorflow as tf

from kflow.components.datasets.task import LearntByTransform, Task
from kflow.components.models import SCALED_BY_TRANSFORM, build_model
from kflow.components.util.examples_dataset import image_shape, make_dataset
from kflow.components.util.schema import feature_spec, int_domain
from kflow.pipeline.dsl.artifacts import Examples, TransformGraph

IMAGE_FEATURE = "image"
LABEL_FEATURE = "label"
SCALING_FILE = "scaling.keras"  # the Transform's preprocessing model (the pixels' scaling), as the assets hold it


class MnistTask(LearntByTransform, Task):
    """Classifies `image` into `label` (0..N-1 from the schema's label domain). Given the Transform's graph, the
    model scales the pixels with it (each channel's learnt range); without one, the convnets divide by 255."""

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
        self.scaling_file: Path | None = None

    def prepare(self, examples: Examples, assets_dir: Path) -> dict[str, Any]:
        """Nothing is learnt from the data here: with a transform graph, its scaling model is copied into the
        assets (the exported model embeds it)."""
        if self.transform_graph is None:
            return {}
        graph: TransformGraph = self.transform_graph
        learnt = self.learnt_with(graph, {"image_shape": list(self.image_shape)})
        assets_dir = Path(assets_dir)
        assets_dir.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(graph.model_file, assets_dir / SCALING_FILE)
        self.scaling_file = assets_dir / SCALING_FILE
        return {"transform_graph": str(graph.uri), "pixel_scale": learnt["scale"]}

    def load_assets(self, assets_dir: Path) -> None:
        scaling = Path(assets_dir) / SCALING_FILE
        self.scaling_file = scaling if scaling.exists() else None

    def scaling(self) -> dict[str, Any]:
        """{"scaling": the Transform's preprocessing model} for a built-in convnet when there is a graph, else {}."""
        if self.scaling_file is None or self.model_name not in SCALED_BY_TRANSFORM or hasattr(self, "user_module"):
            return {}
        from kflow.components.datasets.tabular.preprocessing import load_preprocessing

        return {"scaling": load_preprocessing(self.scaling_file)}

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

    def inputs(self, serialized: tf.Tensor) -> tf.Tensor:
        """The uint8 images of a batch of serialized Examples, labelled or not (images to score: kflow predict)."""
        features = tf.io.parse_example(serialized, {IMAGE_FEATURE: self.spec[IMAGE_FEATURE]})
        return tf.reshape(tf.io.decode_raw(features[IMAGE_FEATURE], tf.uint8), [-1, *self.image_shape])

    def build_model(self) -> keras.Model:
        return build_model(self.model_name, num_classes=self.num_classes, **self.scaling(), **self.model_options)

    def model_context(self) -> dict[str, Any]:
        """What a user's model is told: the classes, and the image's shape as Keras' image layers take it, channels
        last even for grey images (their batches are `[batch, height, width]`, which a functional model of
        `keras.Input(shape=(height, width, 1))` takes as Keras adds the trailing 1)."""
        return {"num_classes": self.num_classes, "image_shape": channels_last(self.image_shape)}

    @property
    def output_size(self) -> int:
        """The class probabilities a model gives an image: the contract a user's model is held to (contract_problem)."""
        return self.num_classes

    def serving_classes(self) -> list[str] | None:
        return [str(digit) for digit in range(self.num_classes)]

    def loss(self) -> keras.losses.Loss:
        return keras.losses.SparseCategoricalCrossentropy(reduction=None)

    def metrics(self) -> list[keras.metrics.Metric]:
        return [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]


def channels_last(shape: tuple[int, ...]) -> list[int]:
    """(height, width[, channels]) → [height, width, channels]."""
    return [*shape, 1] if len(shape) == 2 else list(shape)
