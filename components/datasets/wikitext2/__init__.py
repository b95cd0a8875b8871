"""WikiText-2 lines for masked-language modelling; the source brings train, valid and test files."""

from kflow.components.datasets.bundle import Dataset

DATASET = Dataset.in_package(
    __name__,
    "WikiText2",
    filters=("min_chars", "max_chars", "drop_headings", "drop_blank", "deduplicate"),
)
