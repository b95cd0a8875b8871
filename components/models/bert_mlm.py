"""A BERT masked language model built with keras-hub, trained from scratch.

The default shape is BERT-tiny (2 layers, hidden size 128, 2 heads, feed-forward 512).
The model takes the dict that `WikiText2Task` batches hold (`token_ids`, `padding_mask`,
`segment_ids`, `mask_positions`) and returns logits over the vocabulary at each masked
position, `[batch, mask_selection_length, vocabulary_size]`.
"""

from __future__ import annotations

import keras
import keras_hub

# keras_model_parallel's default LayoutMap (a regex matching whole weight paths → a mesh axis per dimension), Megatron's
# split: the attention heads and the feed-forward's inner dimension are sharded over `model`, the
# output projections on their input dimension, so each layer needs one all-reduce; the token
# embeddings (also the MLM head's output projection) over the hidden dimension.
LAYOUT_MAP: dict[str, tuple[str | None, ...]] = {
    r"token_embedding/embeddings": (None, "model"),
    r".*/self_attention_layer/(query|key|value)/kernel": (None, "model", None),
    r".*/self_attention_layer/attention_output/kernel": ("model", None, None),
    r".*/feedforward_intermediate_dense/kernel": (None, "model"),
    r".*/feedforward_output_dense/kernel": ("model", None),
}


def build_bert_mlm(
    vocabulary_size: int,
    sequence_length: int = 128,
    num_layers: int = 2,
    hidden_dim: int = 128,
    num_heads: int = 2,
    intermediate_dim: int = 512,
    dropout: float = 0.1,
) -> keras.Model:
    """Builds an (uncompiled) `keras_hub.models.BertMaskedLM` over a fresh `BertBackbone`."""
    if hidden_dim % num_heads:
        raise ValueError(f"hidden_dim ({hidden_dim}) must be a multiple of num_heads ({num_heads})")
    if vocabulary_size < 6:
        raise ValueError(f"vocabulary_size must be at least 6 (the special tokens and one word), got {vocabulary_size}")
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=vocabulary_size,
        num_layers=num_layers,
        num_heads=num_heads,
        hidden_dim=hidden_dim,
        intermediate_dim=intermediate_dim,
        dropout=dropout,
        max_sequence_length=sequence_length,
    )
    # The backbone's pooled [CLS] projection feeds classifiers, not the masked-LM head: frozen, it is not handed to
    # the optimizer, which warned on every run that those weights get no gradients.
    backbone.get_layer("pooled_dense").trainable = False
    # No preprocessor: the task masks in its tf.data pipeline, so the model sees token ids.
    return keras_hub.models.BertMaskedLM(backbone=backbone, preprocessor=None, name="bert_mlm")
