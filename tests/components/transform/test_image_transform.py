"""Images through the Transform, on real photographs: tiles of scikit-learn's two sample photos (china.jpg and
flower.jpg, shipped with scikit-learn) as an RGB image folder of two classes. The Beam pass's per-channel pixel
figures are numpy's over the same training images; the graph's model maps each channel's range onto [0, 1]; a
Trainer given the graph builds its convnet on that model (no division by 255 of its own) and its export keeps it."""

from __future__ import annotations

import json

import keras
import numpy as np
import pytest
from PIL import Image

from kflow.components.datasets.images.ingest.executor import run as ingest
from kflow.components.datasets.images.task import ImagesTask
from kflow.components.datasets.mnist.task import SCALING_FILE
from kflow.components.trainer.executor import run as train
from kflow.components.transform.executor import run as transform
from kflow.components.util.examples_dataset import make_dataset
from kflow.components.util.schema import feature_spec, load_schema
from kflow.pipeline.dsl.artifacts import Examples, Model, ModelRun, Rejects, Schema, TransformGraph

TILE = 16


def write_photo_tiles(root, per_class: int = 60):
    """root/<photo>/<n>.png: 16×16 RGB tiles cut from each sample photo, a class a photo."""
    from sklearn.datasets import load_sample_images

    photos = load_sample_images()
    for name, photo in zip(("china", "flower"), photos.images, strict=True):
        folder = root / name
        folder.mkdir(parents=True)
        rows, columns = photo.shape[0] // TILE, photo.shape[1] // TILE
        for n, place in enumerate(np.linspace(0, rows * columns - 1, per_class).astype(int)):
            row, column = divmod(int(place), columns)
            tile = photo[row * TILE : (row + 1) * TILE, column * TILE : (column + 1) * TILE]
            Image.fromarray(tile, "RGB").save(folder / f"{n:03d}.png")
    return root


@pytest.fixture(scope="module")
def photos(tmp_path_factory):
    root = tmp_path_factory.mktemp("photos")
    examples, schema = Examples(root / "examples"), Schema(root / "schema")
    ingest(examples=examples, schema=schema, rejects=Rejects(root / "rejects"),
           source_path=str(write_photo_tiles(root / "tiles")))  # fmt: skip
    graph = TransformGraph(root / "graph")
    summary = transform(examples=examples, schema=schema, transform_graph=graph, dataset="images")
    return examples, schema, graph, summary


def training_images(examples, schema) -> np.ndarray:
    task = ImagesTask(load_schema(schema.file))
    batches = make_dataset(examples.split_files("train"), feature_spec(task.schema), batch_size=256,
                           image_shape=task.image_shape)  # fmt: skip
    return np.concatenate([images for images, _ in batches.as_numpy_iterator()])


def test_the_beam_pass_gives_numpys_pixel_figures_for_each_channel(photos):
    examples, schema, graph, summary = photos
    images = training_images(examples, schema)
    assert images.shape[1:] == (TILE, TILE, 3)
    pixels = images.reshape(-1, 3).astype(np.float64)
    learnt = graph.analyzers
    figures = learnt["analyzers"]["pixels.image"]["value"]
    assert figures["count"] == len(pixels) and learnt["train_examples"] == len(images) == summary["train_examples"]
    assert figures["mean"] == pytest.approx(list(pixels.mean(axis=0)), rel=1e-9)
    assert figures["variance"] == pytest.approx(list(pixels.var(axis=0)), rel=1e-9)
    assert figures["min"] == list(pixels.min(axis=0)) and figures["max"] == list(pixels.max(axis=0))
    counts = json.loads(json.dumps(learnt["label_counts"]))
    assert sum(counts.values()) == len(images) and set(counts) == {"0", "1"}


def test_the_graphs_model_maps_each_channels_training_range_onto_zero_to_one(photos):
    examples, schema, graph, _ = photos
    images = training_images(examples, schema)
    scaling = keras.saving.load_model(graph.model_file, safe_mode=True)
    scaled = np.asarray(scaling.predict(images, verbose=0)).reshape(-1, 3)
    assert scaled.min(axis=0) == pytest.approx([0.0, 0.0, 0.0], abs=1e-6)
    assert scaled.max(axis=0) == pytest.approx([1.0, 1.0, 1.0], abs=1e-6)
    low, high = images.reshape(-1, 3).min(axis=0), images.reshape(-1, 3).max(axis=0)
    expected = (images.reshape(-1, 3).astype(np.float64) - low) / (high - low)
    assert scaled == pytest.approx(expected, abs=1e-6)


@pytest.mark.slow  # ~12 s; make test checks this graph (above), trains MNIST's convnet on its own (the demo)
def test_a_trainer_given_the_graph_builds_the_convnet_on_it_and_exports_it(photos, tmp_path):
    examples, schema, graph, _ = photos
    model = Model(tmp_path / "model")
    train(examples=examples, schema=schema, model=model, model_run=ModelRun(tmp_path / "run"), transform_graph=graph,
          dataset="images", epochs=1, batch_size=32)  # fmt: skip
    assert (model.assets_uri / SCALING_FILE).read_bytes() == graph.model_file.read_bytes()
    task = ImagesTask(load_schema(schema.file))
    task.load_assets(model.assets_uri)
    built = task.build_model()
    assert "preprocessing" in [layer.name for layer in built.layers]
    assert not [layer for layer in built.layers if isinstance(layer, keras.layers.Rescaling)]  # no 1/255 of its own
    without = ImagesTask(load_schema(schema.file)).build_model()  # no graph: the convnet divides by 255 itself
    assert [layer for layer in without.layers if isinstance(layer, keras.layers.Rescaling)]
