"""`kflow predict` of an image model: the images ingest set to make new image files the way the model's training
images were made (the images ingest records it in the schema the model carries: its `image` feature's tags)."""

from __future__ import annotations

import glob
import logging
from pathlib import Path
from typing import Any

from kflow.components.datasets import get_dataset
from kflow.pipeline.app.sections import ingest_parameters
from kflow.pipeline.dsl.config import ConfigError, PipelineConfig

log = logging.getLogger("kflow.predict")

IMAGES = "images"  # the dataset whose ingest reads image files: any image model's data to score


def image_scoring_ingest(
    config: PipelineConfig, shape: tuple[int, ...], data: str, split: str = "score", trained: Any = None
) -> Any:
    """The images ingest set to read every image file under `data` (or the one file) into `split`, keyed by its path,
    made as the model's training images were: its size and channels (`shape`, an MNIST model's too) and, where the
    schema it was trained on (`trained`) records them, their fit, background and convert; the config's data.image
    only where it records none (a model trained before kflow recorded them). The config's other ingest settings are
    taken as a table's scoring takes them: data.filters.max_invalid_fraction, beam_args, shards."""
    from kflow.components.datasets.images.ingest.image_format import RECORDED, recorded_options
    from kflow.components.datasets.images.ingest.source import UNLABELLED
    from kflow.components.util.schema import annotation_tags

    cls = get_dataset(IMAGES).ingest_component()
    # Every setting of the config's ingest that the images ingest takes (those every ingest takes whatever the dataset,
    # data.image of an images config), less what scoring sets: the data, no label, no cap, one split.
    parameters = {name: value for name, value in ingest_parameters(config).items() if name in cls.spec.parameters}
    asked = dict(parameters.get("image") or {})
    made: dict[str, Any] = {"size": list(shape[:2]), "channels": 1 if len(shape) == 2 else shape[2]}
    recorded = recorded_options(annotation_tags(trained, "image")) if trained is not None else {}
    made.update(recorded)
    if not recorded and any(name in asked for name in RECORDED):
        log.info(
            "predict: the model's schema does not record how its training images were made (trained by an earlier "
            "kflow, or on MNIST's pixels): data.image's %s as the config says",
            ", ".join(f"{name} {asked[name]}" for name in RECORDED if name in asked),
        )
    if isinstance(asked.get("size"), int) and not isinstance(asked["size"], bool):
        asked["size"] = [asked["size"], asked["size"]]  # one number: a square
    other = {name: value for name, value in asked.items() if name in made and value != made[name]}
    if other:
        log.warning(
            "predict: images made as the model's training images were (%s), not as data.image asks (%s): the model "
            "reads what it was trained on",
            described(made), described(other),
        )  # fmt: skip
    image = {**made, **asked, **made}  # the model's settings first, then what else data.image says
    parameters.update(source_path=data, source_format=UNLABELLED, image=image, split={split: 1}, max_records=None)
    for reading_of_training in ("label", "tfds"):  # a table's label column, a TFDS dataset: the training data's
        parameters.pop(reading_of_training, None)
    if not Path(data).exists() and not glob.glob(data):  # a glob pattern of TFRecord or Parquet files of images
        raise ConfigError([f"--data: {data} does not exist"])
    return cls("score_ingest", parameters=parameters)


def described(options: dict[str, Any]) -> str:
    """data.image options in a few words: `size 12×12, channels 1, fit pad, background white, convert true`."""
    said = {
        name: "×".join(map(str, value)) if name == "size" else str(value).lower() if name == "convert" else value
        for name, value in options.items()
    }
    return ", ".join(f"{name} {value}" for name, value in said.items())
