"""Quora Insincere Questions: binary text classification; the test split is cut from the labelled CSV."""

from kflow.components.datasets.bundle import Dataset

DATASET = Dataset(
    name="quora",
    ingest="kflow.components.datasets.quora.ingest:QuoraIngest",
    schema="quora/schema.pbtxt",
    task="kflow.components.datasets.quora.task:QuoraTask",
    metrics="kflow.components.datasets.quora.metrics:QuoraMetrics",
    filters=("max_chars",),
    source_test_split=False,
    backend_limits={
        "jax": "its model takes raw question strings (TextVectorization inside the model, so the served model "
        "reads text), and JAX arrays hold no strings; train it under a TensorFlow strategy"
    },
    models=("text_classifier",),
    model_options=("max_tokens", "class_weighting", "max_length", "ngrams", "embedding_dim", "hidden_dim", "dropout"),
)
