"""`kflow predict`: new data, without a label and without a split, scored by a trained model.

    CONFIG's ingest (label: null, one split `score`, the model's columns typed as it was trained) ─ Examples
    ─ the Predictor (components/predictor: Beam, batched) ─ predictions beside each row's key

The model is the latest blessed one of the config's pipeline (as `evaluator.baseline: latest_blessed` finds it),
a run's (a run id or folder), or a Model folder. Everything lands in OUT: `examples/` (the scored data as an
Examples artifact, Split-score: what skew is computed on), `schema/`, `rejects/`, `predictions/`
(Split-score/predictions.csv, .jsonl, .tfrecord.gz) and `predict.json`. OUT is written under a staging name and
renamed when complete, so it never holds half a result.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import shutil
import signal
import sys
from pathlib import Path
from typing import Any

from kflow.components.datasets import DATASETS, get_dataset
from kflow.components.datasets.tabular.examples import ROW_NAME_COLUMNS, SOURCE_ROW
from kflow.components.ingest import ingest_records
from kflow.components.util.predictions import CSV, JSONL, TFRECORD, UNSCORED
from kflow.pipeline.app.held_lines import held_lines
from kflow.pipeline.app.image_scoring import IMAGES, described, image_scoring_ingest
from kflow.pipeline.app.model_choice import choose_model, unrun_preparation
from kflow.pipeline.app.scored_dates import unread_dates
from kflow.pipeline.app.sections import absolute, ingest_parameters
from kflow.pipeline.app.serving_skew import describe_unseen, serving_skew
from kflow.pipeline.dsl.artifacts import Examples, InferenceResult, Model, Rejects, Schema
from kflow.pipeline.dsl.component import load_executor
from kflow.pipeline.dsl.config import ConfigError, PipelineConfig, did_you_mean
from kflow.pipeline.runners.cancellation import Cancelled, interruption, signals_cancel, stop_child_processes
from kflow.pipeline.runners.node_runner import logged_as_published

log = logging.getLogger("kflow.predict")

SPLIT = "score"
FILES = (CSV, JSONL, TFRECORD)
LEAVE_ONE_OUT = 40


def predict(
    config: PipelineConfig,
    data: str,
    output: str | Path,
    model: str | None = None,
    key: str | None = None,
    data_format: str | None = None,
    batch_size: int = 256,
) -> dict[str, Any]:
    """Scores `data` with the chosen model into `output`; returns what predict.json records."""
    if not config.data:
        raise ConfigError(["data: kflow predict reads new data with the config's ingest, and this config has none"])
    chosen = choose_model(config, model)
    if skewed := unrun_preparation(chosen):  # a user trial's Price capped by its pipeline's node, fed raw here
        log.warning("predict: %s", skewed)
    output = Path(output).resolve()
    if output.exists() and (not output.is_dir() or any(output.iterdir())):
        raise ConfigError([f"-o: {output} already holds files: give a new or empty folder"])
    node = _scoring_ingest(config, chosen.model, absolute(data), key, data_format)
    staging = output.parent / f".{output.name}.partial-{secrets.token_hex(4)}"
    staging.mkdir(parents=True)
    with logged_as_published(staging, output):  # its log lines name OUT, where the files will be
        try:
            examples, schema = Examples(staging / "examples"), Schema(staging / "schema")
            # A repeated key's rows are not left out in the end (all are read again): their line waits for that.
            with held_lines(ingest_records.log.name, "records are invalid and left out") as held:
                ingested = _ingest(node, staging)
            unkeyed = node.parameters.get("key") and _rows_without_their_own_key(staging / "rejects")
            if not unkeyed:
                held.release()
            else:
                # A key column that repeats a value, or leaves one empty, names no row: every row is scored, keyed by
                # its place, rather than refusing those rows (as the data's key is absent: FILE:LINE).
                key = node.parameters["key"]
                log.warning(
                    "predict: the key column %r %s: each row is keyed by its place (FILE:LINE, FILE#ROW)", key, unkeyed
                )
                for folder in ("examples", "schema", "rejects"):
                    shutil.rmtree(staging / folder, ignore_errors=True)
                node.parameters["key"] = None
                ingested = _ingest(node, staging)
            predictions = InferenceResult(staging / "predictions")
            from kflow.components.predictor.executor import ColumnsRefused

            try:
                scored = load_executor("kflow.components.predictor.executor:run")(
                    model=chosen.model,
                    examples=examples,
                    schema=schema,
                    predictions=predictions,
                    split=SPLIT,
                    batch_size=batch_size,
                    beam_args=list(config.beam_args),
                )
            except ColumnsRefused as error:  # a TFRecord's features are known only once it is read
                raise DataRefused(str(error)) from error
            # Skew: the scored data's statistics against the training data's (serving_skew.py), into OUT/skew.json.
            # Not the key, nor the row names: they name rows, and new rows have other names.
            ignore = {predictions.record["key"], *ROW_NAME_COLUMNS, *_naming_columns(chosen.model)}
            ignore |= _new_by_nature(chosen.model)
            words, statistics = _read_as_words(chosen.model), staging / "statistics"
            absent = _absent_inputs(chosen.model, schema)
            skew = serving_skew(config, chosen.model.uri, examples, SPLIT, statistics, ignore, schema, words, absent)
            (staging / "skew.json").write_text(json.dumps(skew, indent=2) + "\n")
            for said in (unread := unread_dates(chosen.model, examples, SPLIT)):
                log.warning("predict: %s", said)
            record = {
                "model": chosen.model.uri,
                "model_origin": chosen.origin,
                "model_run": chosen.run_dir,
                "data": node.parameters["source_path"],
                "key": "each row's place in its source: FILE:LINE, FILE#ROW, an image's path"
                if predictions.record["key"] == SOURCE_ROW or getattr(node, "keys_by_place", False)
                else predictions.record["key"],
                "scored": scored["count"],
                "unscored": scored.get("unscored", 0),
                "rejected": ingested.get("rejected", 0),
                "examples": str(output / "examples"),
                "predictions": {name: str(output / "predictions" / f"Split-{SPLIT}" / name) for name in FILES},
                "skew": {
                    name: skew[name] for name in ("compared", "skewed", "message", "reason", "unseen") if name in skew
                },
                "unread_dates": unread,
            }
            if node.parameters.get("image"):  # how the images were made: as the model's training images were
                record["image"] = node.parameters["image"]
            (staging / "predict.json").write_text(json.dumps(record, indent=2) + "\n")
            if output.exists():
                output.rmdir()  # empty, checked above
            os.rename(staging, output)
        except DataRefused as error:  # too many invalid rows: their rejects are kept beside OUT
            said, rejects = str(error), staging / "rejects" / "rejects.jsonl"
            if rejects.is_file():
                kept = output.with_name(f"{output.name}.rejects.jsonl")
                shutil.move(rejects, kept)
                said = said.replace(str(rejects), str(kept)).replace("to train without them", "to score the others")
                said = said.replace("none is left to train on", "none is left to score")
            raise ConfigError([f"--data: {as_scoring(said).removeprefix('--data: ')}"]) from None
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return record


class DataRefused(ValueError):
    """The scoring ingest refused --data (no record, a value it cannot read, too many invalid rows): the user's input,
    exit 2 as a missing column is, where a model that fails to score is exit 1."""


def _ingest(node: Any, staging: Path) -> dict[str, Any]:
    """The scoring ingest into `staging`'s examples, schema and rejects; a refusal for too many rows without their
    own key (repeated or empty) is left to the caller, which keys the rows by their place instead."""
    executor = load_executor(node.spec.executor)
    artifacts = {"examples": Examples(staging / "examples"), "schema": Schema(staging / "schema")}
    try:
        return executor(**artifacts, rejects=Rejects(staging / "rejects"), **node.parameters)
    except ValueError as error:
        if node.parameters.get("key") and _rows_without_their_own_key(staging / "rejects"):
            return {}
        raise DataRefused(str(error)) from error


def _rows_without_their_own_key(rejects: Path) -> str | None:
    """What the key column does, where first, when the ingest rejected a row for its key: repeated or empty."""
    path = rejects / "rejects.jsonl"
    if not path.is_file():
        return None
    with path.open() as lines:
        for line in lines:
            reject = json.loads(line)
            if reject.get("reason") == "duplicate_key":
                return f"repeats values ({reject.get('key')!r} again at {reject.get('position')})"
            if reject.get("reason") == "empty_key":
                return f"leaves values empty (at {reject.get('position')})"
    return None


def _naming_columns(model: Model) -> set[str]:
    """The columns that named the rows the model was trained on (schema role key or row_names), not features."""
    from kflow.components.util.schema import load_schema

    if not model.training_schema_file.is_file():
        return set()
    roles = {"role=key", "role=row_names"}
    return {f.name for f in load_schema(model.training_schema_file).feature if roles & set(f.annotation.tag)}


def _absent_inputs(model: Model, scored: Schema) -> set[str]:
    """The columns the model reads that the scored data lacks (those some training rows lacked too)."""
    from kflow.components.datasets.task import task_for_model
    from kflow.components.util.schema import load_schema

    reads = set(getattr(task_for_model(model, model.training_schema_file), "input_features", None) or ())
    return reads - {feature.name for feature in load_schema(scored.file).feature}


def _new_by_nature(model: Model) -> set[str]:
    """The trained schema's features whose new values say nothing of skew: those the model does not read (an
    identifier, a constant) and dates (read as their parts: new rows come later by nature)."""
    from kflow.components.datasets.task import task_for_model
    from kflow.components.util.schema import load_schema

    if not model.training_schema_file.is_file():
        return set()
    task = task_for_model(model, model.training_schema_file)
    reads = set(getattr(task, "input_features", None) or ())
    if not reads:
        return set()
    plan = getattr(task, "preprocessing", None) or {}
    dates = {spec["name"] for spec in plan.get("features", []) if spec.get("kind") == "date"}
    # A constant the model leaves out is compared where the new rows hold it: Argentina's rows scored by a model of
    # Chile's are another population, though the model never read the country.
    constants = {name for name, why in (plan.get("left_out") or {}).items() if str(why).startswith("a constant")}
    return {feature.name for feature in load_schema(model.training_schema_file).feature} - reads - constants | dates


def _read_as_words(model: Model) -> set[str]:
    """The features the model reads as free text (its words, not its values)."""
    from kflow.components.datasets.task import task_for_model

    if not model.training_schema_file.is_file():
        return set()
    plan = getattr(task_for_model(model, model.training_schema_file), "preprocessing", None) or {}
    texts = {spec["name"] for spec in plan.get("features", []) if spec.get("kind") == "text"}
    return texts | set(plan.get("texts", []))  # a preprocessing_fn's (its tokens analyzers' columns)


def _scoring_ingest(config: PipelineConfig, model: Model, data: str, key: str | None, data_format: str | None) -> Any:
    """The config's ingest (or `data_format`'s) set to read `data` without a label into one split, the columns the
    model reads typed as it was trained, after checking that the data has them and the key column (where the ingest
    can say which columns a source has without reading it: csv, parquet; the Predictor checks the others')."""
    from kflow.components.datasets.tabular.table_files import parquet_files
    from kflow.components.datasets.task import task_for_model
    from kflow.components.util.schema import annotation_tags, load_schema, may_be_absent

    dataset = data_format or config.data.dataset
    if data_format is None and dataset == "csv" and parquet_files(data):  # its bytes say so: no --format needed
        log.info("predict: %s is Parquet: read as such", data)
        dataset = "parquet"
    if dataset not in DATASETS:
        raise ConfigError([f"--format: no dataset {dataset!r}{did_you_mean(dataset, DATASETS)}"])
    if not model.training_schema_file.is_file():
        raise ConfigError(
            [
                f"--model: {model.uri} has no assets/{Model.SCHEMA_FILE} (the schema it was trained on): it was "
                "trained by an earlier kflow; run the pipeline again to train one that carries it"
            ]
        )
    task = task_for_model(model, model.training_schema_file)
    if hasattr(task, "image_shape") and data_format in (None, IMAGES):
        return image_scoring_ingest(config, task.image_shape, data, SPLIT, task.schema)
    cls = get_dataset(dataset).ingest_component()
    spec = cls.spec.parameters
    score_format = getattr(cls, "score_format", None)
    if score_format is not None:  # its own format for data to score (quora's test.csv, wikitext2's text files)
        parameters = {name: value for name, value in ingest_parameters(config).items() if name in spec}
        parameters.update(source_path=data, split={SPLIT: 1}, max_records=None, source_format=score_format)
        return cls("score_ingest", parameters=parameters)
    if "label" not in spec or not spec["label"].optional:
        readable = "tabular data (csv, parquet, tfrecord), image files, Quora's questions and text (wikitext2)"
        raise ConfigError([f"--format: kflow predict reads {readable}, not {dataset}"])
    needed = list(getattr(task, "input_features", None) or [])
    trained = load_schema(model.training_schema_file)
    parameters = {name: value for name, value in ingest_parameters(config).items() if name in spec}
    unset = {"label": None, "key": None, "split_files": None, "max_records": None, "columns": {}}
    unset["problem_type"] = None if "problem_type" in spec and spec["problem_type"].optional else "classification"
    parameters.update(
        {name: value for name, value in unset.items() if name in spec}, source_path=data, split={SPLIT: 1}
    )
    # A table whose columns scoring types as training read them (csv, parquet): its header first. A TFRecord's
    # features carry their types: its ingest finds them while it reads, and refuses an absent key itself.
    header = _header(cls, parameters, needed) if hasattr(cls, "inspect_source") and "columns" in spec else None
    if header is None:
        parameters["key"] = key if key is not None else config.data.key
        return cls("score_ingest", parameters=parameters)
    if key is not None and key not in header:
        columns = ", ".join(header)
        raise ConfigError([f"--key: {key!r} is not a column of {data}{did_you_mean(key, header)} (columns: {columns})"])
    if key is None and config.data.key:
        key = config.data.key if config.data.key in header else None
        if key is None:  # the training data's key: new data may come without it
            log.warning(
                "predict: %s has no column %r (data.key): each row is keyed by FILE:LINE", data, config.data.key
            )
    if key is None and not config.data.key:  # the rows' names or numbers the model was trained beside, where present
        naming = _naming_columns(model)
        key = next((name for name in header if name in naming), None)
    parameters["key"] = key
    missing = [name for name in needed if name not in header and not may_be_absent(trained, name)]
    absent = [name for name in needed if name not in header and name not in missing]
    if absent:  # columns some training rows lacked too: each scored row lacks them, as those rows did
        log.warning(
            "predict: %s has no column %s; the model was trained with rows lacking it too: every row is scored "
            "without it (as a missing value)", data, ", ".join(map(repr, absent))
        )  # fmt: skip
    if missing:
        others = [name for name in header if name not in needed]  # a column renamed since training, or recased
        raise ConfigError(
            [f"{data}: no column {', '.join(map(repr, missing))}, which the model reads (it reads {', '.join(needed)})"
             f"{did_you_mean(missing[0], others)}"]
        )  # fmt: skip
    # Read as the model was trained: a column of whole numbers here may have held decimals in training. One of whole
    # numbers in training, unless the config declares it int, takes decimals too (the ingest reads such a column
    # again as float in training; the model takes float32 for both).
    # Typed as the model parses it (task.types): a column only older spans hold has no kflow_type (read as strings).
    declared, parsed = config.data.columns or {}, getattr(task, "types", {})
    parameters["columns"] = {
        name: "float" if kind == "int" and declared.get(name) != "int" else kind
        for name in needed
        if name not in absent
        and (kind := parsed.get(name) or annotation_tags(trained, name).get("kflow_type", "string"))
    }
    return cls("score_ingest", parameters=parameters)


def _header(cls: Any, parameters: dict[str, Any], needed: tuple[str, ...] | list[str] = ()) -> list[str]:
    """The data's columns. Named to the ingest, the columns the model reads find a header below lines above it (a
    title, an export's date: csv/ingest/header.py), as the training run's label did; when one of them is not
    there, the header as it stands, for the caller to name what is missing."""
    # All of them, else all but one (the one missing: named as such, where the header needs them to be found, a
    # one-column header cut at its delimiter, rather than every column of the uncut header).
    # (At most LEAVE_ONE_OUT columns: each probe reads the sample again.)
    singles = [[name for name in needed if name != left] for left in needed] if len(needed) <= LEAVE_ONE_OUT else []
    for named in (list(needed), *singles) if needed else ():
        try:
            probe = {**parameters, "columns": dict.fromkeys(named, "string")}
            return list(cls("score_ingest", parameters=probe).inspect_source().header)
        except (ValueError, OSError):
            continue
    try:
        return list(cls("score_ingest", parameters=parameters).inspect_source().header)
    except (ValueError, OSError) as error:
        raise ConfigError([f"--data: {as_scoring(str(error)).removeprefix('--data: ')}"]) from None


def as_scoring(message: str) -> str:
    """An ingest's message in the words of scoring: the data is --data's, another format is --format's."""
    import re

    message = message.replace("data.source.path: ", "--data: ")
    # Scoring types the columns as training read them, not as the user declared: say so.
    message = re.sub(
        r"data\.columns\.(.+?): declared (\w+), but", r"--data: column \1, read as \2 in training, but", message
    )
    return re.sub(r"set data\.dataset: (\w+)", r"give --format \1", message)


def predict_command(args: Any) -> int:
    """`kflow predict`: prints where the predictions are. What refuses the command's input (its flags, the config,
    the data) is one line and exit 2; a failure while scoring (the model's) one line and exit 1."""
    from kflow.pipeline.app.config_loading import default_split
    from kflow.pipeline.dsl.config import load_config
    from kflow.pipeline.dsl.printable import printable

    overrides = list(args.overrides) + ([f"pipeline_root={args.pipeline_root}"] if args.pipeline_root else [])
    config = load_config(args.config, overrides, default_split)
    if args.batch_size < 1:
        raise ConfigError([f"--batch-size: must be ≥ 1 (got {args.batch_size})"])
    # As the `kflow` program, SIGINT and SIGTERM cancel (a host process keeps its own signals).
    with signals_cancel() if getattr(args, "program", False) else contextlib.nullcontext():
        try:
            record = predict(config, args.data, args.output, args.model, args.key, args.data_format, args.batch_size)
        except ConfigError:
            raise
        except BaseException as error:
            # Ctrl-C or SIGTERM, however Beam wrapped it: the staging folder is gone and OUT is left as it was.
            if (interrupt := interruption(error)) is not None:
                stop_child_processes()
                cancelled = Cancelled.from_interrupt(interrupt)
                name = signal.Signals(cancelled.signum).name
                print(f"kflow: predict cancelled by {name}; nothing was written to {args.output}", file=sys.stderr)
                return cancelled.exit_code
            if not isinstance(error, (ValueError, OSError)):
                raise
            # The data or the model refused while scoring: the cause, in one line.
            print(f"kflow: error: predict: {printable(as_scoring(str(error)))}", file=sys.stderr)
            return 1
    rejects = Path(args.output) / "rejects" / "rejects.jsonl"
    rejected = f"; {record['rejected']} row(s) rejected: {rejects}" if record["rejected"] else ""
    print(f"scored {record['scored']} row(s) of {record['data']} with {record['model_origin']}{rejected}")
    if record.get("unscored"):
        print(f"{record['unscored']} of them not scored ('unscored' in the predictions, empty cells): {UNSCORED}")
    print(f"predictions (key: {record['key']}): {record['predictions'][CSV]} (and .jsonl, .tfrecord.gz)")
    print(f"scored data (Examples): {record['examples']}")
    if record.get("image"):
        print(f"images made: {described(record['image'])}")
    if record["skew"].get("skewed"):
        print(f"skew from the training data: {record['skew']['message']} ({Path(args.output) / 'skew.json'})")
    if record["skew"].get("unseen"):
        print(f"values not seen in training (each read as an unknown one): {describe_unseen(record['skew']['unseen'])}")
    for said in record["unread_dates"]:
        print(f"dates not read: {said}")
    return 0
