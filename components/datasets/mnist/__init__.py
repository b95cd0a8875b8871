"""MNIST handwritten digits: 28×28 grey images, ten classes; the source brings its own test split."""

from kflow.components.datasets.bundle import Dataset

DATASET = Dataset(
    name="mnist",
    ingest="kflow.components.datasets.mnist.ingest:MnistIngest",
    schema="mnist/schema.pbtxt",
    task="kflow.components.datasets.mnist.task:MnistTask",
    metrics="kflow.components.datasets.mnist.metrics:MnistMetrics",
    models=("mnist_convnet", "image_convnet"),
)
