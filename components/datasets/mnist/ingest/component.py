"""The MNIST ingest component: a source of handwritten digits in, split TFRecord Examples out.

TFX's ExampleGen for MNIST: reads `mnist.npz`, the four IDX files, scikit-learn's
digits, TFDS or the Keras download; writes the source's training records to the hash
splits of `split` (by default the dataset's, bundle.SOURCE_TEST_SPLIT) and its test records to the split
"test"; refused records go to `rejects` with their reason and position.
"""

from __future__ import annotations

from kflow.components.datasets.bundle import SOURCE_TEST_SPLIT
from kflow.components.ingest.ingest_spec import ingest_component_spec, split_shares
from kflow.pipeline.dsl.component import Component


class MnistIngest(Component):
    spec = ingest_component_spec(
        "mnist",
        source="A mnist.npz file, or a folder holding mnist.npz or the four IDX files (gzipped or not).",
        source_optional=True,
        formats="auto | npz | idx | sklearn_digits | tfds | download. auto: npz, else IDX files in "
        "source_path, else ~/.keras/datasets/mnist.npz.",
        split=split_shares(
            SOURCE_TEST_SPLIT, "Hash buckets dividing the source's training records; its test records form 'test'."
        ),
        records="records of each source split",
        source_files="kflow.components.datasets.mnist.ingest.locate:source_files",
    )
