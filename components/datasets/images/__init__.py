"""Your own images as files: a folder per class (or a manifest), any size Pillow reads, made one size (declared,
or the most common among the files); an image classification task with MNIST's convnet (any size and channels) or
the larger image_convnet. Or the images of a prepared TensorFlow Datasets dataset (`data.source.format: tfds`)."""

from kflow.components.datasets.bundle import Dataset

DATASET = Dataset(
    name="images",
    ingest="kflow.components.datasets.images.ingest:ImagesIngest",
    schema=None,
    task="kflow.components.datasets.images.task:ImagesTask",
    metrics="kflow.components.datasets.mnist.metrics:MnistMetrics",
    source_test_split=False,
    data_fields={"image": "image", "tfds": "tfds"},
)
