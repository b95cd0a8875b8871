"""Images from a prepared TensorFlow Datasets dataset (`data.source.format: tfds`, `data.tfds: {name, version,
splits}`): mnist, cifar10, beans, any builder with one `Image` feature and one `ClassLabel`.

The dataset is read from its data_dir as the tabular TFDS ingest reads it (no builder code, no network), each kflow
split from the TFDS split spec `data.tfds.splits` names (the dataset's own splits: `data.split` is unused). The
images are read as TFDS stored them, encoded (PNG or JPEG), and each is decoded and made the declared size and
channels as an image file is (executor.ImageConverter.decoded), so a folder and a TFDS copy of the same images give
the same Examples; refused ones are kept with their reason at `<split spec>#<index>`. Without `data.image.size`,
the feature's own size when TFDS fixes one, else the size a sample of the train split's images share (the most common,
or their median height and width).
"""

from __future__ import annotations

import io
import logging
from collections import Counter
from dataclasses import dataclass
from typing import Any

from kflow.components.datasets.images.ingest.image_format import SIZE_SAMPLE, shared_size, shown_size
from kflow.components.ingest.ingest_records import INVALID, make_reject
from kflow.components.ingest.tfds_source import Chunk, Source, read_options, split_sizes, with_splits
from kflow.components.util.example_proto import Example

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TfdsImages:
    """A prepared TFDS dataset's image feature, its class-label feature and their classes."""

    source: Source
    options: dict[str, Any]  # data.tfds with its defaults and its splits resolved (with_splits)
    image: str
    label: str
    classes: tuple[str, ...]
    shape: tuple[int | None, ...]  # the Image feature's (height, width, channels); None where it varies

    @classmethod
    def open(cls, source_path: str | None, tfds_options: dict[str, Any] | None) -> TfdsImages:
        """The dataset `data.tfds` names; a ValueError naming the field when it is not an image classification."""
        import tensorflow_datasets as tfds

        options = read_options(tfds_options)
        source = Source.of(source_path, options)
        builder = source.builder(download=options["download"])
        features = builder.info.features
        images = [name for name, feature in features.items() if isinstance(feature, tfds.features.Image)]
        labels = [name for name, feature in features.items() if isinstance(feature, tfds.features.ClassLabel)]
        supervised = builder.info.supervised_keys or (None, None)
        image = _one(images, supervised[0], "an Image", options["name"], list(features))
        label = _one(labels, supervised[1], "a ClassLabel", options["name"], list(features))
        options = with_splits(options, builder, given=tfds_options)
        shape = tuple(features[image].shape)
        return cls(source, options, image, label, tuple(features[label].names), shape)

    def sizes(self, max_records: int | None) -> dict[str, int]:
        """{kflow split: images to read}."""
        return split_sizes(self.source.builder(), self.options, max_records)

    def records(self, spec: str, start: int = 0, stop: int | None = None):
        """(index, encoded image bytes, class index) of `spec`'s records from `start` to `stop`, not decoded."""
        import tensorflow_datasets as tfds

        dataset = self.source.builder().as_dataset(
            split=spec, shuffle_files=False, decoders={self.image: tfds.decode.SkipDecoding()}
        )
        dataset = dataset.skip(start).take(-1 if stop is None else stop - start)
        for index, record in enumerate(tfds.as_numpy(dataset), start=start):
            yield index, record[self.image], int(record[self.label])

    def channels(self) -> int:
        """1 for grey, else 3 (RGBA and others are converted), from the feature's shape, else as the folder's
        images are (executor.channels_of): grey only if the first 100 train images all are."""
        if self.shape[-1] is not None:
            return 1 if self.shape[-1] == 1 else 3
        from PIL import Image

        from kflow.components.datasets.images.ingest.executor import channels_of

        modes = []
        for _, encoded, _ in self.records(self.options["splits"]["train"], 0, 100):
            try:
                with Image.open(io.BytesIO(encoded)) as opened:
                    modes.append(opened.mode)
            except Exception:  # noqa: BLE001 - an unreadable image is the worker's to reject; look at the next.
                continue
        if modes:
            return channels_of(modes)
        raise ValueError(
            f"data.tfds.splits.train: none of the first 100 images of {self.options['splits']['train']} is readable"
        )

    def common_size(self, train_size: int, fit: str) -> tuple[int, int]:
        """(height, width): the feature's when TFDS fixes it, else the size SIZE_SAMPLE train images share."""
        if self.shape[0] is not None and self.shape[1] is not None:
            log.info(
                "images ingest: data.image.size not set: %d×%d, the size of every image of the dataset", *self.shape[:2]
            )
            return self.shape[0], self.shape[1]
        from PIL import Image

        step, sizes = max(1, train_size // SIZE_SAMPLE), Counter()
        for index, encoded, _ in self.records(self.options["splits"]["train"], 0, train_size):
            if index % step == 0:
                try:
                    with Image.open(io.BytesIO(encoded)) as opened:  # The header: no pixels decoded.
                        sizes[shown_size(opened)] += 1
                except Exception:  # noqa: BLE001 - an unreadable image is the worker's to reject (with its reason).
                    continue
            if sizes.total() >= SIZE_SAMPLE:
                break
        if not sizes:
            raise ValueError(f"data.tfds.name: none of the sampled train images of {self.source.name} is readable")
        return shared_size(sizes, f"{sizes.total()} train images sampled", fit)


def _one(names: list[str], supervised: str | None, kind: str, dataset: str, features: list[str]) -> str:
    """The feature of `kind`: the supervised key's when it is one, else the only one."""
    if supervised in names:
        return supervised
    if len(names) == 1:
        return names[0]
    found = f"several ({', '.join(names)}) and no supervised key among them" if names else "none"
    raise ValueError(
        f"data.tfds.name: {dataset} is no image classification: it needs one {kind} feature, and has {found} "
        f"(features: {', '.join(features)})"
    )


@dataclass(frozen=True)
class TfdsImageConverter:
    """Decodes and converts a chunk's images as the files' converter does; the Examples are the same."""

    dataset: TfdsImages
    converter: Any  # executor.ImageConverter: the declared size, channels and fit

    def __call__(self, chunk: Chunk) -> tuple[list, list]:
        accepted, found = [], []
        for index, encoded, label in self.dataset.records(chunk.spec, chunk.start, chunk.stop):
            position = f"{chunk.spec}#{index:09d}"  # as the tabular TFDS ingest
            pixels, problem = self.converter.decoded(io.BytesIO(encoded))
            if problem is not None:
                reason, details = problem
                record = {"split": chunk.spec, "index": index, "label": self.dataset.classes[label]}
                found.append(make_reject(reason, INVALID, position, record, **details))
                continue
            example = Example()
            features = example.features.feature
            features["image"].bytes_list.value.append(pixels)
            features["label"].int64_list.value.append(label)
            features["key"].bytes_list.value.append(position.encode("utf-8"))
            accepted.append((position, chunk.split, example.SerializeToString(deterministic=True)))
        return accepted, found
