"""WikiText-2's preprocessing as a Keras model: raw lines in, `[CLS] tokens [SEP] [PAD]...` ids out.

What the Transform writes as the graph's `preprocessing.keras` for WikiText-2 (components/transform/
wordpiece_analysis.py): keras-hub's `BertTokenizer` given the learnt WordPiece vocabulary and its
`StartEndPacker`, the same layers the task's dataset packs lines with (task.py `_pack`). A model of its own, not a
functional one: keras-hub's tokenizers run their pure-Python path when called eagerly, which a functional graph of
string input cannot trace; here both layers are told to run TensorFlow's ops, and the vocabulary is the model's
config, so it loads with `safe_mode=True`.
"""

from __future__ import annotations

from typing import Any

import keras
import keras_hub


@keras.saving.register_keras_serializable(package="kflow")
class WordPiecePreprocessing(keras.Model):
    def __init__(self, vocabulary: list[str], lowercase: bool, sequence_length: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.vocabulary, self.lowercase, self.sequence_length = list(vocabulary), bool(lowercase), int(sequence_length)
        self.tokenizer = keras_hub.models.BertTokenizer(
            vocabulary=self.vocabulary, lowercase=self.lowercase, _allow_python_workflow=False
        )
        self.packer = keras_hub.layers.StartEndPacker(
            sequence_length=self.sequence_length,
            start_value=self.tokenizer.cls_token_id,
            end_value=self.tokenizer.sep_token_id,
            pad_value=self.tokenizer.pad_token_id,
            _allow_python_workflow=False,
        )
        self.built = True  # no weights: its one state, the vocabulary, is its config

    def call(self, inputs: dict[str, Any]) -> dict[str, Any]:
        return {"token_ids": self.packer(self.tokenizer(inputs["text"]))}

    def build_from_config(self, config: dict[str, Any]) -> None:
        self.built = True  # nothing to build: the vocabulary, its only state, is the config

    def get_config(self) -> dict[str, Any]:
        return {
            **super().get_config(),
            "vocabulary": self.vocabulary,
            "lowercase": self.lowercase,
            "sequence_length": self.sequence_length,
        }
