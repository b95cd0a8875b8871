"""Guide 001 (course page, "Distributed training in TensorFlow"): the Quora Insincere Questions classifier with
MirroredStrategy and `Model.fit`.

As the guide's `train_and_evaluate_model`: a text embedding of 128 dimensions over the raw question strings,
then Dense 256 ReLU -> Dense 64 ReLU -> Dense 1 sigmoid, compiled with Adam(learning rate 1e-4), binary
cross-entropy and binary accuracy, inside `MirroredStrategy().scope()`; the global batch is 64 a replica times
the replicas; the training set shuffled with a buffer of `train_df.size` (rows x 3 columns) and batched with
drop_remainder; `fit(epochs=100)` with EarlyStopping(monitor="val_loss", patience=2, mode="min"), TensorBoard and
a one-dot-an-epoch logger (tfdocs' EpochDots), verbose 0.

Adapted to this machine:
- the guide's embedding is the pretrained NNLM module from TF Hub (`nnlm-en-dim128`, not trainable), which
  cannot be downloaded here. In its place: the same architecture with an embedding trained from scratch - a
  TextVectorization layer (lower-cased, punctuation stripped, split on whitespace, the 20,000 most frequent
  words of the training questions), an Embedding of 128 dimensions and a masked mean over the words (NNLM
  combines its word vectors by sum / sqrt(n)). It is trainable: a frozen random embedding would learn nothing.
  Figures are therefore not the guide's. The words become ids in the input pipeline, not inside the model as
  the hub layer takes strings: Keras 3's `fit` under MirroredStrategy averages the first input batch over the
  replicas to build the model (keras/src/backend/tensorflow/trainer.py, `_maybe_symbolic_build`), which fails
  on strings (`AddN` has no string kernel).
- no GPU: the CPU split into 2 logical devices, the strategy built over them (global batch 128).
- no download: the guide loads a pickled train/valid DataFrame split it does not show. Here the CSV is
  ../shared/datasets/quora-insincere/train_sample.csv (999 labelled questions; the full competition file works
  too) and it is split by kflow's own plan, as kflow's ingest splits it (8:1:1, stratified by label, by a hash of
  the qid; `stratified_split` below): train_df = kflow's train split, valid_df = its eval split, and the model is
  scored on its test split, the questions kflow's evaluator scores.
- the validation batches keep their remainder (the guide drops it): the sample's validation split (100
  questions) is smaller than one global batch, and EarlyStopping would have no val_loss to watch.
- the metric is kflow's headline for Quora, ROC AUC on the test split (trapezoids, tied scores counting one
  half, as kflow computes it), with the guide's binary accuracy at 0.5 beside it.

Prints one JSON line at the end: {"guide", "wall_s", "train_s", "examples_per_s", "metric": "roc_auc", "value"}.
"""

from __future__ import annotations

import csv
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402  (first: starts the clock, standard library only)

GUIDE = "quora_classifier"
BATCH_SIZE_PER_REPLICA = 64
SPLIT = {"train": 8, "eval": 1, "test": 1}  # kflow's pipeline/configs/quora.yaml
MAX_CHARS = 1000  # kflow's data.filters.max_chars default: longer questions are filtered
MAX_TOKENS = 20000
EMBED_SIZE = 128


def read_questions(path: Path, max_records: int | None) -> list[tuple[str, str, int]]:
    """(qid, question, label) of the CSV's first `max_records` rows, refusing what kflow's ingest refuses (a
    wrong field count, a repeated or empty qid, a label other than 0/1, an empty or over-long question)."""
    rows, seen = [], set()
    with open(path, newline="", encoding="utf-8") as file:
        reader = csv.reader(file)
        header = next(reader)
        if [name.strip() for name in header] != ["qid", "question_text", "target"]:
            raise ValueError(f"{path}: expected the header qid,question_text,target, found {header}")
        for index, fields in enumerate(reader):
            if max_records and index >= max_records:
                break
            if len(fields) != 3:
                continue
            qid, question, target = (field.strip() for field in fields)
            duplicate = qid in seen
            seen.add(qid)
            if duplicate or not qid or target not in ("0", "1") or not question or len(question) > MAX_CHARS:
                continue
            rows.append((qid, question, int(target)))
    return rows


def stratified_split(rows: list[tuple[str, str, int]], weights: dict[str, int] = SPLIT) -> dict[str, list]:
    """kflow's split, by kflow's own plan (components/ingest/split_plan.py, StratifiedPlan): within each label, the
    questions ordered by a 64-bit SHA-256 hash of the qid and cut by the splits' shares, the remainders apportioned
    over the labels. Imported rather than copied, so that both sides score the same questions whatever the plan."""
    from kflow.components.ingest.split_plan import StratifiedPlan

    cuts = StratifiedPlan(dict(weights))([(row[0], str(row[2])) for row in rows])
    splits: dict[str, list] = {name: [] for name in sorted(weights)}
    for row in rows:
        splits[cuts(row[0], str(row[2]))].append(row)
    return splits


def roc_auc(labels, scores) -> float:
    """The area under the ROC curve, tied scores counting one half (the Mann-Whitney statistic)."""
    import numpy as np
    from scipy.stats import rankdata

    labels, scores = np.asarray(labels).ravel(), np.asarray(scores, np.float64).ravel()
    positives = int(labels.sum())
    negatives = len(labels) - positives
    if not positives or not negatives:
        raise ValueError("ROC AUC needs both classes in the test split")
    ranks = rankdata(scores)
    return float((ranks[labels == 1].sum() - positives * (positives + 1) / 2) / (positives * negatives))


def text_vectorization(train_texts):
    """The words of a question as ids of the 20,000 most frequent words of the training questions (lower-cased,
    punctuation stripped): the embedding's vocabulary, where NNLM brings its own."""
    import keras

    vectorize = keras.layers.TextVectorization(max_tokens=MAX_TOKENS, output_mode="int")
    vectorize.adapt(train_texts)
    return vectorize


def build_model(vocabulary_size: int, embed_size: int = EMBED_SIZE):
    """The guide's classifier over word ids, its hub embedding replaced by one trained from scratch (see the
    docstring)."""
    import keras

    inputs = keras.Input(shape=(None,), dtype="int64")
    x = keras.layers.Embedding(vocabulary_size, embed_size, mask_zero=True)(inputs)
    x = keras.layers.GlobalAveragePooling1D()(x)
    x = keras.layers.Dense(256, activation="relu")(x)
    x = keras.layers.Dense(64, activation="relu")(x)
    outputs = keras.layers.Dense(1, activation="sigmoid")(x)
    return keras.Model(inputs, outputs)


def main() -> int:
    parse = common.parser(__doc__, data=common.DATASETS / "quora-insincere" / "train_sample.csv", epochs=100)
    parse.add_argument(
        "--logdir",
        type=Path,
        default=None,
        help="keep the TensorBoard logs here (default: a temporary folder, removed at the end)",
    )
    args = parse.parse_args()
    devices = common.logical_cpus(args.devices)
    common.seed(args.seed)

    import keras
    import numpy as np
    import tensorflow as tf

    splits = stratified_split(read_questions(args.data, args.max_records))
    train_df, valid_df, test_df = splits["train"], splits["eval"], splits["test"]
    print(f"questions: train {len(train_df)}, valid {len(valid_df)}, test {len(test_df)}")

    def arrays(rows):
        return np.array([row[1] for row in rows], dtype=object), np.array([row[2] for row in rows], np.float32)

    (train_x, train_y), (valid_x, valid_y), (test_x, test_y) = arrays(train_df), arrays(valid_df), arrays(test_df)

    strategy = tf.distribute.MirroredStrategy(devices)
    print(f"Number of devices: {strategy.num_replicas_in_sync}")
    buffer_size = len(train_df) * 3  # train_df.size: rows x (qid, question_text, target)
    global_batch_size = BATCH_SIZE_PER_REPLICA * strategy.num_replicas_in_sync
    vectorize = text_vectorization(train_x)

    def word_ids(texts, *labels):
        return (vectorize(texts), *labels)

    train_dataset = (
        tf.data.Dataset.from_tensor_slices((train_x, train_y))
        .shuffle(buffer_size)
        .batch(global_batch_size, drop_remainder=True)
        .map(word_ids)
        .prefetch(tf.data.AUTOTUNE)
    )
    valid_dataset = tf.data.Dataset.from_tensor_slices((valid_x, valid_y)).batch(global_batch_size).map(word_ids)
    valid_dataset = valid_dataset.prefetch(tf.data.AUTOTUNE)

    class EpochDots(keras.callbacks.Callback):
        """tfdocs.modeling.EpochDots: a dot an epoch, the metrics every 100."""

        def on_epoch_end(self, epoch, logs=None):
            if epoch % 100 == 0:
                shown = ", ".join(f"{name}:{value:.4f}" for name, value in (logs or {}).items())
                print(f"\nEpoch: {epoch}, {shown}")
            print(".", end="", flush=True)

    logdir = args.logdir or Path(tempfile.mkdtemp(prefix="guide-quora-logs-"))
    with strategy.scope():
        model = build_model(vectorize.vocabulary_size())
        model.compile(
            optimizer=keras.optimizers.Adam(learning_rate=0.0001),
            loss=keras.losses.BinaryCrossentropy(),
            metrics=[keras.metrics.BinaryAccuracy(name="accuracy")],
        )
        started = time.perf_counter()
        history = model.fit(
            train_dataset,
            epochs=args.epochs,
            validation_data=valid_dataset,
            callbacks=[
                EpochDots(),
                keras.callbacks.EarlyStopping(monitor="val_loss", patience=2, mode="min"),
                keras.callbacks.TensorBoard(str(logdir / "nnlm-en-dim128")),
            ],
            verbose=0,
        )
        train_s = time.perf_counter() - started
    print(f"\n\n Time for {1000 * train_s} ms ({len(history.epoch)} epochs)")

    test_dataset = tf.data.Dataset.from_tensor_slices(test_x).batch(global_batch_size).map(word_ids)
    scores = model.predict(test_dataset, verbose=0)
    accuracy = float(np.mean((scores.ravel() >= 0.5) == (test_y == 1)))
    if args.logdir is None:
        shutil.rmtree(logdir, ignore_errors=True)
    common.report(
        GUIDE,
        train_s=train_s,
        examples=(len(train_df) // global_batch_size) * global_batch_size * len(history.epoch),
        metric="roc_auc",
        value=roc_auc(test_y, scores),
        accuracy=accuracy,
        test_examples=len(test_df),
        test_positives=int(test_y.sum()),
        devices=strategy.num_replicas_in_sync,
        epochs=len(history.epoch),
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
