"""WikiText-2 lines for masked-language modelling; the source brings train, valid and test files."""

from kflow.components.datasets.bundle import Dataset

DATASET = Dataset(
    name="wikitext2",
    ingest="kflow.components.datasets.wikitext2.ingest:WikiText2Ingest",
    schema="wikitext2/schema.pbtxt",
    task="kflow.components.datasets.wikitext2.task:WikiText2Task",
    metrics="kflow.components.datasets.wikitext2.metrics:WikiText2Metrics",
    filters=("min_chars", "max_chars", "drop_headings", "drop_blank", "deduplicate"),
    models=("bert_mlm",),
    model_options=(
        "vocabulary_size",
        "lowercase",
        "sequence_length",
        "mask_selection_rate",
        "mask_selection_length",
        "mask_token_rate",
        "random_token_rate",
        "num_layers",
        "hidden_dim",
        "num_heads",
        "intermediate_dim",
        "dropout",
    ),
)
