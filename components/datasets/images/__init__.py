"""Your own images as files: a folder per class (or a manifest), any size Pillow reads, made one size (declared,
or the most common among the files); an image classification task with MNIST's convnet (any size and channels) or
the larger image_convnet. Or the images of a prepared TensorFlow Datasets dataset (`data.source.format: tfds`)."""

from kflow.components.datasets.bundle import Dataset

# What an image folder's config trains with where it leaves these fields out (pipeline/app/dataset_training.py): up
# to 100 epochs, stopped 10 after the best validation loss and kept at the best epoch, batches of 32. 1,000 MNIST
# digits as PNG files in a folder per class, a config of the path alone: the general defaults (3 epochs of 128, 21
# steps, the batch normalisation's statistics not settled) scored 0.18 on the test split; this recipe 0.98 after 27
# epochs (71 s from path to BLESSED on 2 cores, 2026-11-29).
TRAINING = {"trainer.epochs": 100, "trainer.early_stopping_patience": 10, "trainer.batch_size": 32}

DATASET = Dataset(
    name="images",
    ingest="kflow.components.datasets.images.ingest:ImagesIngest",
    schema=None,
    task="kflow.components.datasets.images.task:ImagesTask",
    metrics="kflow.components.datasets.mnist.metrics:MnistMetrics",
    source_test_split=False,
    data_fields={"image": "image", "tfds": "tfds", "label": "label"},
    training=TRAINING,
    models=("mnist_convnet", "image_convnet"),
)
