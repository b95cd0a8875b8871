"""Transform's executor: the analyzers' full pass over Split-train with Beam, then the Keras preprocessing model.

The preprocessing is learnt here, once, not in each training process: the analyzers (analyzers.py) run as one
Beam pipeline (the config's runner; FnApiRunner locally, like the ingests), their results go into
`analyzers.json` and a vocabulary file each, and a Keras model is built from them (raw features in, model
inputs out), every layer given its state as constructor arguments, saved in the Keras format and loaded back
with `safe_mode=True` before the artifact is published. The Trainer builds its model on that graph, so the
serving SavedModel, the Evaluator and the BulkInferrer apply the same preprocessing.

Without a `transform.module`, the graph is the dataset's own preprocessing (tabular_analysis.py, text_analysis.py,
wordpiece_analysis.py, image_analysis.py); with one, the user's `preprocessing_fn(inputs, analyzers)`
(user_preprocessing.py).
"""

from __future__ import annotations

import hashlib
import logging
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kflow.components.datasets import get_dataset
from kflow.components.datasets.module_imports import UserCode, save_module
from kflow.components.datasets.tabular.task import TabularTask
from kflow.components.ingest.ingest_options import data_beam_args
from kflow.components.transform.analyzers import Analyzer, run_analyzers
from kflow.components.transform.image_analysis import image_analyzers, image_plan, image_preprocessing
from kflow.components.transform.tabular_analysis import tabular_analyzers, tabular_plan
from kflow.components.transform.text_analysis import text_analyzers, text_plan, text_preprocessing
from kflow.components.transform.wordpiece_analysis import (
    WORDS,
    wordpiece_analyzers,
    wordpiece_plan,
    wordpiece_preprocessing,
)
from kflow.components.util.corrupt_examples import reads_examples
from kflow.components.util.schema import load_schema
from kflow.pipeline.dsl.artifacts import Examples, Schema, TransformGraph

log = logging.getLogger("kflow.transform")
WORDPIECE_FILE = "wordpiece.txt"  # one token a line: BERT's vocab.txt, what keras-hub's BertTokenizer reads


@reads_examples
def run(
    *,
    examples: Examples,
    schema: Schema,
    transform_graph: TransformGraph,
    dataset: str,
    options: dict[str, Any] | None = None,
    module: str | None = None,
    module_source: str | None = None,
    module_imports: dict[str, str] | None = None,
    beam_args: Sequence[str] = (),
) -> dict[str, Any]:
    """Writes the TransformGraph of `examples`' training split; returns figures for the log."""
    beam_args = analysis_beam_args(examples, beam_args)
    task_class = get_dataset(dataset).task_class()
    # The other datasets' own passes: Quora's vocabulary and class weights, WikiText-2's WordPiece vocabulary,
    # the images' scaling.
    own = next(((analyze, write) for base, analyze, write in OWN_PASSES if _derives_from(task_class, base)), None)
    if own is not None:
        if module_source is not None:
            raise ValueError(f"transform.module: the {dataset} dataset takes no preprocessing_fn (tabular ones do)")
        analyze, write = own
        task = task_class(load_schema(schema.file), None, dict(options or {}))
        analyzers, results, seconds = _analyze_train(examples, transform_graph, beam_args, *analyze(task))
        return write(Analysed(task, examples, transform_graph, analyzers, results, seconds))
    if not issubclass(task_class, TabularTask):
        raise ValueError(
            f"the transform learns tabular, image, Quora and WikiText-2 preprocessing; not the {dataset} dataset's"
        )
    task = TabularTask(load_schema(schema.file), None, dict(options or {}))
    if "train" not in examples.splits:
        raise ValueError(f"the Examples under {examples.uri} have no train split to learn the preprocessing from")
    transform_graph.path.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    if module_source is not None:
        from kflow.components.transform.user_preprocessing import user_graph

        origin = Path(module).name if module else TransformGraph.MODULE_FILE
        code = UserCode(module_source, origin, module_imports)
        plan, analyzers, results, preprocessing = user_graph(task, examples, code, beam_args, transform_graph)
        save_module(transform_graph.path / TransformGraph.MODULE_FILE, module_source, module_imports)
        plan["module_digest"] = hashlib.sha256(module_source.encode()).hexdigest()
    else:
        analyzers, columns = tabular_analyzers(task)
        results = run_analyzers(
            _split_patterns(examples), analyzers, columns, beam_args, transform_graph.path / ".results.json"
        )
        plan = tabular_plan(task, results)
        from kflow.components.datasets.tabular.preprocessing import build_preprocessing

        preprocessing = build_preprocessing(plan["features"])
    seconds = time.monotonic() - started
    write_graph(transform_graph, plan, analyzers, results, preprocessing, task.options)
    return _summary(analyzers=len(analyzers), inputs=len(plan["inputs"]), outputs=len(preprocessing.output),
                    left_out=len(plan["left_out"]), analyze_seconds=round(seconds, 2))  # fmt: skip


@dataclass(frozen=True)
class Analysed:
    """A dataset's own pass, done: its task, the Examples, the graph being written, the analyzers and results."""

    task: Any
    examples: Examples
    graph: TransformGraph
    analyzers: list[Analyzer]
    results: dict[str, Any]
    seconds: float


def _write_images(done: Analysed) -> dict[str, Any]:
    """MNIST and image folders: each channel's pixel range and the label's counts (image_analysis.py)."""
    plan = image_plan(done.task, done.results)
    options = {"image_shape": plan["image_shape"]}
    write_graph(done.graph, plan, done.analyzers, done.results, image_preprocessing(plan), options)
    return _summary(train_examples=plan["train_examples"], scale=plan["scale"], analyze_seconds=done.seconds)


def _write_text(done: Analysed) -> dict[str, Any]:
    """Quora: the vocabulary of unigrams and bigrams and the class weights (text_analysis.py)."""
    task = done.task
    plan = text_plan(task, done.results)
    preprocessing = text_preprocessing(plan)
    vocabulary = plan.pop("vocabulary")
    options = {**task.options, "ngrams": task.model_kwargs["ngrams"]}
    plan = {**plan, "vocabulary_size": len(vocabulary)}
    write_graph(done.graph, plan, done.analyzers, done.results, preprocessing, options)
    return _summary(vocabulary_size=len(vocabulary), train_examples=plan["train_examples"],
                    analyze_seconds=done.seconds)  # fmt: skip


def _write_wordpiece(done: Analysed) -> dict[str, Any]:
    """WikiText-2: the WordPiece vocabulary from Beam's word counts, and the baseline token (wordpiece_analysis.py)."""
    task, graph = done.task, done.graph
    plan = wordpiece_plan(task, done.results, done.examples)
    vocabulary = plan.pop("vocabulary")
    graph.vocabulary_dir.mkdir(parents=True, exist_ok=True)
    (graph.vocabulary_dir / WORDPIECE_FILE).write_text("".join(f"{token}\n" for token in vocabulary))
    plan = {**plan, "vocabulary_size": len(vocabulary), "wordpiece_vocabulary": f"vocabularies/{WORDPIECE_FILE}"}
    from kflow.components.datasets.wikitext2.task import GRAPH_OPTIONS  # loaded with the task

    graph_options = {name: task.options[name] for name in GRAPH_OPTIONS}
    write_graph(graph, plan, done.analyzers, done.results, wordpiece_preprocessing(task), graph_options)
    most_frequent = plan["baseline"]["most_frequent_token"]
    return _summary(vocabulary_size=len(vocabulary), words=done.results[WORDS]["distinct"],
                    most_frequent_token=most_frequent, analyze_seconds=done.seconds)  # fmt: skip


# The datasets with a pass of their own: (their task's base class, its analyzers, what writes the graph). The base
# by name: importing each task to ask would load keras-hub (0.7 s) into every table's Transform.
OWN_PASSES = (
    ("kflow.components.datasets.quora.task.QuoraTask", text_analyzers, _write_text),
    ("kflow.components.datasets.wikitext2.task.WikiText2Task", wordpiece_analyzers, _write_wordpiece),
    ("kflow.components.datasets.mnist.task.MnistTask", image_analyzers, _write_images),
)


def _derives_from(task_class: type, base: str) -> bool:
    """Whether `task_class` is the class named `base` (module.qualname) or derives from it (a plugin's task may)."""
    return any(f"{cls.__module__}.{cls.__qualname__}" == base for cls in task_class.__mro__)


def _analyze_train(
    examples: Examples, graph: TransformGraph, beam_args: Sequence[str], analyzers: list[Analyzer], columns: dict
) -> tuple[list[Analyzer], dict[str, Any], float]:
    """The analyzers' Beam pass over Split-train alone; returns them, their results and the pass's seconds."""
    if "train" not in examples.splits:
        raise ValueError(f"the Examples under {examples.uri} have no train split to learn the preprocessing from")
    graph.path.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    train = {"train": _split_patterns(examples)["train"]}
    results = run_analyzers(train, analyzers, columns, beam_args, graph.path / ".results.json")
    return analyzers, results, round(time.monotonic() - started, 2)


def _summary(**figures: Any) -> dict[str, Any]:
    log.info("transform: %s", ", ".join(f"{key}={value}" for key, value in figures.items()))
    return figures


def analysis_beam_args(examples: Examples, beam_args: Sequence[str]) -> list[str]:
    """The analyzers' Beam options, chosen as an ingest's are (components/ingest/ingest_options.py): worker
    processes, one a core, only for a training split large enough to pay for their start (about 3 s), unless the
    options name a running mode or a worker count themselves."""
    return data_beam_args(beam_args, int(examples.recorded_counts.get("train", 0)))


def _split_patterns(examples: Examples) -> dict[str, str]:
    return {split: str(examples.split_uri(split) / "*.gz") for split in examples.splits}


def write_graph(
    graph: TransformGraph,
    plan: dict[str, Any],
    analyzers: Sequence[Analyzer],
    results: dict[str, Any],
    preprocessing: Any,
    options: dict[str, Any],
) -> None:
    """analyzers.json, a file a vocabulary, and the preprocessing model (checked to load with safe_mode)."""
    from kflow.components.datasets.tabular.preprocessing import load_preprocessing

    graph.vocabulary_dir.mkdir(parents=True, exist_ok=True)
    described = {}
    for analyzer in analyzers:
        value = results[analyzer.id]
        entry = {"kind": analyzer.kind, "column": analyzer.column, "options": analyzer.options}
        if isinstance(value, dict) and "ranked" in value:  # a vocabulary: its values in a file, its figures here
            name = re.sub(r"[^A-Za-z0-9_.-]", "_", analyzer.id) + ".txt"
            lines = "".join(f"{_one_line(item)}\t{count}\n" for item, count in value["ranked"])
            (graph.vocabulary_dir / name).write_text(lines)
            entry["file"] = f"vocabularies/{name}"
            entry["value"] = {key: item for key, item in value.items() if key != "ranked"}
            entry["value"]["size"] = len(value["ranked"])
        else:
            entry["value"] = value
        described[analyzer.id] = entry
    graph.write_json(TransformGraph.ANALYZERS_FILE, {**plan, "analyzers": described, "options": options})
    preprocessing.save(graph.model_file)
    load_preprocessing(graph.model_file)  # refuses now what a Trainer would refuse later


def _one_line(value: Any) -> str:
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t")
