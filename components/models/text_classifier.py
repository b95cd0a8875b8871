"""A fastText-style text classifier that takes raw strings.

`TextVectorization` (lower-casing, punctuation stripping, unigrams and bigrams, a
vocabulary adapted on the training split) sits inside the model, so the saved model
and the exported SavedModel serve raw question strings. Token ids are embedded,
averaged over the non-padding positions and fed to a sigmoid unit: the probability
that the text is positive (for Quora, insincere).
"""

from __future__ import annotations

import keras


def build_text_classifier(
    vocabulary: list[str],
    max_length: int = 64,
    ngrams: int = 2,
    embedding_dim: int = 64,
    hidden_dim: int = 64,
    dropout: float = 0.2,
) -> keras.Model:
    """Builds the (uncompiled) classifier: string `[batch]` in, probability `[batch, 1]` out.

    `vocabulary` is the token list `TextVectorization.get_vocabulary()` returned when it
    was adapted, without the padding token `""` and the out-of-vocabulary token `[UNK]`
    (those two are added back here), or with both as its first two entries.
    """
    words = [word for word in vocabulary if word not in ("", "[UNK]")]
    if not words:
        raise ValueError("the text classifier needs a non-empty vocabulary")
    inputs = keras.Input(shape=(), dtype="string", name="text")
    vectorize = keras.layers.TextVectorization(
        vocabulary=words, ngrams=ngrams, output_mode="int", output_sequence_length=max_length, name="vectorize"
    )
    x = vectorize(inputs)
    x = keras.layers.Embedding(len(words) + 2, embedding_dim, mask_zero=True, name="embedding")(x)
    x = keras.layers.GlobalAveragePooling1D(name="average")(x)
    if hidden_dim:
        x = keras.layers.Dense(hidden_dim, activation="relu", name="hidden")(x)
    x = keras.layers.Dropout(dropout)(x)
    outputs = keras.layers.Dense(1, activation="sigmoid", name="probability")(x)
    return keras.Model(inputs, outputs, name="text_classifier")
