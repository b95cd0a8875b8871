"""trainer.module of quora_classifier.yaml: guide 001's classifier (course page "Distributed training in
TensorFlow": text embedding of 128 -> Dense 256 ReLU -> Dense 64 ReLU -> Dense 1 sigmoid).

The guide's pretrained NNLM embedding cannot be downloaded here: as in the guide script beside this folder, an
Embedding of 128 dimensions trained from scratch, averaged over the words, over the vocabulary kflow's quora
task learnt on Split-train (`options["vocabulary"]`, unigrams: `model_options.ngrams: 1`). The model reads the
raw question strings, so the served model does too.
"""

import keras


def build_model(schema, options):
    text = keras.Input(shape=(), dtype="string", name="text")
    vectorize = keras.layers.TextVectorization(
        vocabulary=options["vocabulary"], ngrams=options["ngrams"], output_sequence_length=options["max_length"]
    )
    x = keras.layers.Embedding(len(options["vocabulary"]) + 2, options["embedding_dim"], mask_zero=True)(
        vectorize(text)
    )
    x = keras.layers.GlobalAveragePooling1D()(x)
    x = keras.layers.Dense(256, activation="relu")(x)
    x = keras.layers.Dense(64, activation="relu")(x)
    outputs = keras.layers.Dense(1, activation="sigmoid")(x)
    return keras.Model(text, outputs, name="guide_quora_classifier")
