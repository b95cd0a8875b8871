"""The MNIST ingest component: a source of handwritten digits in, split TFRecord Examples out.

TFX's ExampleGen for MNIST: reads `mnist.npz`, the four IDX files, scikit-learn's
digits, TFDS or the Keras download; writes the source's training records to the hash
splits of `split` ({"train": 9, "eval": 1}) and its test records to the split "test";
refused records go to `rejects` with their reason and position.
"""

from __future__ import annotations

from kflow.components.ingest.ingest_spec import INGEST_OUTPUTS, ingest_parameters
from kflow.pipeline.dsl.component import Component, ComponentSpec, Parameter


class MnistIngest(Component):
    spec = ComponentSpec(
        inputs={},
        outputs=INGEST_OUTPUTS,
        parameters=ingest_parameters(
            source_path=Parameter(
                str,
                optional=True,
                is_path=True,
                description="A mnist.npz file, or a folder holding mnist.npz or the four IDX files (gzipped or not).",
            ),
            source_format=Parameter(
                str,
                default="auto",
                description="auto | npz | idx | sklearn_digits | tfds | download. auto: npz, else IDX files in "
                "source_path, else ~/.keras/datasets/mnist.npz.",
            ),
            split=Parameter(
                dict,
                default={"train": 9, "eval": 1},
                description="Hash buckets dividing the source's training records; its test records form 'test'.",
            ),
            max_records=Parameter(
                int, optional=True, description="Read at most this many records of each source split."
            ),
        ),
        executor="kflow.components.datasets.mnist.ingest.executor:run",
        source_files="kflow.components.datasets.mnist.ingest.locate:source_files",
    )
