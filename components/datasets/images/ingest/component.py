"""The image ingest component: image files (a folder per class, or a manifest) in, uint8 image Examples out."""

from __future__ import annotations

from kflow.components.datasets.bundle import SPLIT_WITH_TEST
from kflow.components.ingest.ingest_spec import ingest_component_spec, split_shares
from kflow.pipeline.dsl.component import Component, Parameter


class ImagesIngest(Component):
    keys_by_place = True  # each image scored is keyed by its path under the folder (or FILE#INDEX in a table)
    spec = ingest_component_spec(
        "images",
        source="A folder with one sub-folder of images per class, or a manifest: a .csv with path "
        "and label columns or a .jsonl of {path, label} (paths relative to the manifest's folder); TFRecord or "
        "Parquet files holding encoded images and their labels (a file, a folder or a glob pattern); or, with format "
        "tfds, a TFDS data_dir (default: TFDS's).",
        formats="auto | folders | manifest | tfrecord | parquet | tfds (a prepared TensorFlow Datasets dataset: "
        "data.tfds). auto: class folders, a manifest, or TFRecord or Parquet files told by their first bytes.",
        reading={
            "label": Parameter(
                str,
                optional=True,
                description="The label column of images kept in a TFRecord or Parquet table (unset: the column named "
                "as labels are, label or image/class/label, or the one other whole-number column).",
            ),
            "image": Parameter(
                dict,
                optional=True,
                description="{size: [height, width] (unset: the most common size among a sample of the files, or their "
                "median height and width where sizes vary), "
                "channels: 1 | 3 (unset: 1 if every sampled image is grey, else 3), fit: resize | pad | exact, "
                "convert: true (false: another colour mode is rejected)}",
            ),
            "tfds": Parameter(
                dict,
                optional=True,
                description="With format tfds: {name, version (null: the newest prepared), splits: {train: "
                "'train[:90%]', eval: ..., test: ...} (unset: train, validation, test; a split the dataset lacks cut "
                "from train), download: false}; the dataset's Image and ClassLabel features are read.",
            ),
        },
        split=split_shares(SPLIT_WITH_TEST, "Shares of the images per split, per class."),
        records="images",
        source_files="kflow.components.datasets.images.ingest.source:source_files",
    )

    def check_parameters(self) -> list[str]:
        from kflow.components.datasets.images.ingest.image_format import ImageFormat, sampled_headers
        from kflow.components.datasets.images.ingest.source import (
            UNLABELLED,
            checked_classes,
            list_images,
            named_images,
        )
        from kflow.components.datasets.images.ingest.table_images import LABEL_OF_A_TABLE, TableImages, table_kind

        source_format = self.parameters.get("source_format", "auto")
        try:
            ImageFormat.from_options(self.parameters.get("image"))
            if source_format == "tfds":
                from kflow.components.datasets.images.ingest.tfds_images import TfdsImages

                TfdsImages.open(self.parameters.get("source_path"), self.parameters.get("tfds"))
            elif kind := table_kind(self.parameters.get("source_path"), source_format):
                TableImages.check(self.parameters.get("source_path"), kind, self.parameters.get("label"))
            else:  # what the ingest's driver refuses before reading an image
                source_path = self.parameters.get("source_path")
                if self.parameters.get("label") is not None:
                    return [LABEL_OF_A_TABLE]
                images = named_images(list_images(source_path, source_format), source_path, say=False)
                if source_format != UNLABELLED:
                    checked_classes(images, source_path)
                sampled_headers(images)  # none of a sample an image Pillow reads: the ingest's driver refuses it
        except (ValueError, OSError) as error:
            return [str(error)]
        return []
