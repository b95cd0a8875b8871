"""Artifact types: typed handles on the folders that components read and write.

An artifact is a folder (`uri`) whose layout its class documents. Layouts follow
TFX's standard artifacts so that tools which know TFX find their way around.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, ClassVar

from kflow.pipeline.dsl.module_files import imports_folder


class Artifact:
    """A typed folder produced by one component execution and read by others."""

    type_name: ClassVar[str] = "Artifact"
    # The KFP artifact schema this type maps to when compiled for Kubeflow.
    kfp_schema_title: ClassVar[str] = "system.Artifact"

    def __init__(self, uri: str | Path):
        self.uri = str(uri)

    @property
    def path(self) -> Path:
        return Path(self.uri)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(uri={self.uri!r})"

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self.uri == other.uri  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self), self.uri))

    def write_json(self, name: str, payload: Any) -> Path:
        """Writes `payload` as pretty JSON to `{uri}/{name}` and returns the path."""
        target = self.path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(payload, indent=2, sort_keys=True) + "\n")
        return target

    def read_json(self, name: str) -> Any:
        return json.loads((self.path / name).read_text())

    def split_uri(self, split: str) -> Path:
        """A split's folder, as TFX lays out its per-split artifacts (Examples, statistics, anomalies, predictions)."""
        return self.path / f"Split-{split}"

    def gone_elsewhere(self) -> str | None:
        """Why what it records outside its folder (its manifest checks the folder) no longer holds: run it again."""
        return None

    METADATA_FILE = "metadata.json"

    @property
    def metadata(self) -> dict[str, Any]:
        """The artifact's properties (KFP's artifact metadata): a Model's `hyperparameters`, Examples' `spans`; {}."""
        path = self.path / self.METADATA_FILE
        return json.loads(path.read_text()) if path.is_file() else {}

    def set_metadata(self, **properties: Any) -> None:
        self.write_json(self.METADATA_FILE, {**self.metadata, **properties})


class Examples(Artifact):
    """Split examples as gzipped TFRecord files of `tf.train.Example`.

    Layout:
        {uri}/Split-{split}/data_tfrecord-{shard:05d}-of-{shards:05d}.gz
        {uri}/stats.json   counts: {"read": N, "accepted": {split: n}, "rejected": {reason: n}}
    """

    type_name = "Examples"
    kfp_schema_title = "system.Dataset"

    @property
    def splits(self) -> list[str]:
        return sorted(p.name[len("Split-") :] for p in self.path.glob("Split-*") if p.is_dir())

    def split_files(self, split: str) -> list[str]:
        files = sorted(str(p) for p in self.split_uri(split).glob("*.gz"))
        if not files:
            raise FileNotFoundError(f"no TFRecord files for split {split!r} under {self.split_uri(split)}")
        return files

    @property
    def stats(self) -> dict:
        return self.read_json("stats.json")

    @property
    def recorded_counts(self) -> dict[str, int]:
        """{split: records} as the ingest counted them (stats.json); {} where no ingest did (made otherwise)."""
        return self.stats.get("accepted", {}) if (self.path / "stats.json").is_file() else {}


class Schema(Artifact):
    """A TensorFlow Metadata `Schema` proto in text format: `{uri}/schema.pbtxt`."""

    type_name = "Schema"

    @property
    def file(self) -> Path:
        return self.path / "schema.pbtxt"


class Rejects(Artifact):
    """Records an ingest component refused, each kept with the reason and its source position: `{uri}/rejects.jsonl`,
    one JSON object a line, {"reason": str, "kind": "invalid" | "filtered", "position": str, "record": ...}."""

    type_name = "Rejects"
    kfp_schema_title = "system.Dataset"

    @property
    def file(self) -> Path:
        return self.path / "rejects.jsonl"

    def read(self) -> list[dict]:
        lines = self.file.read_text().splitlines() if self.file.exists() else []
        return [json.loads(line) for line in lines if line]


class ExampleStatistics(Artifact):
    """Per-split feature statistics as TFX writes them (StatisticsGen). Layout:
    {uri}/Split-{split}/FeatureStats.pb   a binary TFMD `DatasetFeatureStatisticsList`
    {uri}/statistics.html                 a readable summary of every split
    """

    type_name = "ExampleStatistics"

    def split_file(self, split: str) -> Path:
        return self.split_uri(split) / "FeatureStats.pb"

    @property
    def splits(self) -> list[str]:
        return sorted(p.parent.name[len("Split-") :] for p in self.path.glob("Split-*/FeatureStats.pb"))


class ExampleAnomalies(Artifact):
    """What ExampleValidator found in each split against the schema. Layout:
    {uri}/Split-{split}/SchemaDiff.pb   a binary TFMD `Anomalies` proto (TFX's layout)
    {uri}/anomalies.json                {"splits": {split: [{feature, kind, description, severity}]},
                                        "count": n, "blocking": errors (what stops the Trainer), "on_anomaly",
                                        "message": the first error}
    """

    type_name = "ExampleAnomalies"

    def split_file(self, split: str) -> Path:
        return self.split_uri(split) / "SchemaDiff.pb"

    @property
    def summary(self) -> dict[str, Any]:
        return self.read_json("anomalies.json")


class Model(Artifact):
    """A trained Keras model.

    Layout:
        {uri}/model.keras          the Keras model, for Keras users and for evaluation
        {uri}/Format-Serving/      the exported TensorFlow SavedModel, for serving
        {uri}/assets/task.json     what reads data for it: {"dataset", "model_name", "model_options"}
        {uri}/assets/user_module.py its trainer.module, if any, and user_module_imports/ (`module_digest`)
        {uri}/assets/schema.pbtxt  the schema of the Examples it was trained on (what scoring parses new data by)
        {uri}/assets/classes.txt   a classifier's class names, one a line, in its scores' order
    {uri}/assets/…             the task's own assets (a vocabulary, class weights, …)
    """

    type_name = "Model"
    kfp_schema_title = "system.Model"
    TASK_FILE = "task.json"
    MODULE_FILE = "user_module.py"
    SCHEMA_FILE = "schema.pbtxt"
    CLASSES_FILE = "classes.txt"

    @property
    def assets_uri(self) -> Path:
        return self.path / "assets"

    @property
    def task_spec(self) -> dict[str, Any]:
        """The dataset and task options the model was trained with, so that evaluation reads data the same way."""
        path = self.assets_uri / self.TASK_FILE
        if not path.is_file():
            raise FileNotFoundError(f"the model {self.uri} has no assets/{self.TASK_FILE}: it was not trained by kflow")
        return json.loads(path.read_text())

    def write_task_spec(self, dataset: str, model_name: str, model_options: dict[str, Any]) -> None:
        spec = {"dataset": dataset, "model_name": model_name, "model_options": model_options}
        self.assets_uri.mkdir(parents=True, exist_ok=True)
        (self.assets_uri / self.TASK_FILE).write_text(json.dumps(spec, indent=2, sort_keys=True) + "\n")

    @property
    def keras_file(self) -> Path:
        return self.path / "model.keras"

    @property
    def class_names(self) -> list[str] | None:
        """What the classifier's scores stand for, a class a line in their order (`assets/classes.txt`, written by
        the Trainer for every classifier); None for a model of no classes, or trained before kflow wrote it."""
        path = self.assets_uri / self.CLASSES_FILE
        return path.read_text().splitlines() if path.is_file() else None

    @property
    def module_digest(self) -> str | None:
        """The sha256 of the user module the model runs (`assets/user_module.py`) and the files it imports, if any."""
        if not (module := self.assets_uri / self.MODULE_FILE).is_file():
            return None
        digest = hashlib.sha256(module.read_bytes())  # as before the files it imports travelled with it
        for path in sorted(imports_folder(module).rglob("*.py")):
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
        return digest.hexdigest()

    @property
    def serving_uri(self) -> Path:
        return self.path / "Format-Serving"

    @property
    def training_schema_file(self) -> Path:
        """The schema of the Examples the model was trained on (written since issue 53: a model carries it)."""
        return self.assets_uri / self.SCHEMA_FILE


class HyperParameters(Artifact):
    """A hyperparameter search's result (components/tuner). Layout:
    {uri}/best.json      {"settings": {trainer field: value}, "parameters": {Trainer parameter: value},
                          "objective": {"metric", "direction", "value"}, "trial": n}
    {uri}/trials.json    every trial: number, state (completed, pruned, failed), settings, value, curve, seconds
    {uri}/trials.csv     the same, one row a trial
    {uri}/objective.png  the objective by trial; {uri}/study.journal: Optuna's (trials, reports, pruning)
    """

    type_name = "HyperParameters"

    @property
    def best(self) -> dict[str, Any]:
        return self.read_json("best.json")

    @property
    def trials(self) -> list[dict[str, Any]]:
        return self.read_json("trials.json")


class TransformGraph(Artifact):
    """Preprocessing learnt once by the Transform's full Beam pass over Split-train (components/transform).

    Layout:
        {uri}/analyzers.json           every analyzer's result: {"analyzers": {id: {kind, input, value, ...}},
                                       "inputs": {raw feature: kind}, "label", "head", "features" (the tabular
                                       plan), "left_out", "module_digest"}
        {uri}/vocabularies/{id}.txt    each vocabulary, most frequent first: a value, a tab, its count, a line
        {uri}/preprocessing.keras      raw features in, model inputs out: Keras layers built from the results
        {uri}/preprocessing_fn.py      the user's transform.module, when there is one
    """

    type_name = "TransformGraph"
    ANALYZERS_FILE = "analyzers.json"
    MODEL_FILE = "preprocessing.keras"
    MODULE_FILE = "preprocessing_fn.py"

    @property
    def analyzers(self) -> dict[str, Any]:
        return self.read_json(self.ANALYZERS_FILE)

    @property
    def model_file(self) -> Path:
        return self.path / self.MODEL_FILE

    @property
    def vocabulary_dir(self) -> Path:
        return self.path / "vocabularies"


class ModelRun(Artifact):
    """What happened while training: `{uri}/logs/` (TensorBoard) and `{uri}/history.json`."""

    type_name = "ModelRun"

    @property
    def log_dir(self) -> Path:
        return self.path / "logs"

    @property
    def history(self) -> dict:
        return self.read_json("history.json")


class ModelEvaluation(Artifact):
    """Evaluation results. Layout:
    {uri}/metrics.json        the task's metrics, per slice, and the baseline's
    {uri}/kfp_metrics.json    {"scalars": {name: number}, "confusion_matrix": {categories, matrix}, "roc": …},
                              what a Kubeflow run page shows as Metrics and ClassificationMetrics
    {uri}/report.html         the report, with its plots beside it
    """

    type_name = "ModelEvaluation"
    kfp_schema_title = "system.Metrics"

    @property
    def metrics(self) -> dict:
        return self.read_json("metrics.json")

    @property
    def kfp_metrics_path(self) -> Path:
        return self.path / "kfp_metrics.json"

    @property
    def kfp_metrics(self) -> dict[str, Any]:
        return json.loads(self.kfp_metrics_path.read_text())


class ModelBlessing(Artifact):
    """The gate's verdict: an empty `{uri}/BLESSED` or `{uri}/NOT_BLESSED` file,
    and `{uri}/blessing.json` with every check, its value, its bound and its result."""

    type_name = "ModelBlessing"

    @property
    def blessed(self) -> bool:
        if (self.path / "BLESSED").exists():
            return True
        if (self.path / "NOT_BLESSED").exists():
            return False
        raise FileNotFoundError(f"{self.uri} holds neither BLESSED nor NOT_BLESSED")

    @property
    def checks(self) -> list[dict[str, Any]]:
        """Every check of the verdict: metric, bound, threshold, value, baseline, change, passed."""
        return self.record.get("checks", [])

    @property
    def failed_checks(self) -> list[dict[str, Any]]:
        return [check for check in self.checks if not check.get("passed")]

    @property
    def baseline_model(self) -> str | None:
        """The URI of the model the verdict compared against, if any."""
        return self.record.get("baseline_model")

    @property
    def record(self) -> dict[str, Any]:
        """blessing.json: {"blessed", "checks", "baseline_model", "no_baseline", "model_module_digest"}."""
        path = self.path / "blessing.json"
        return json.loads(path.read_text()) if path.is_file() else {}

    def set_blessed(self, blessed: bool, checks: list[dict], **details: Any) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        (self.path / ("BLESSED" if blessed else "NOT_BLESSED")).touch()
        self.write_json("blessing.json", {"blessed": blessed, "checks": checks, **details})


class InferenceResult(Artifact):
    """A model's predictions on a split (TFX's BulkInferrer output).

    Layout: `{uri}/inference.json` {"inferred", "reason", "split", "count", "model", "outputs"}, and per split
        Split-<split>/predictions.tfrecord.gz  tf.train.Examples: `key`, `label` (when the data has one) and
                                               `predicted_class` + `scores` (classes) or `prediction` (a number)
        Split-<split>/predictions.jsonl        the same, a JSON object a line, for people and tools
        Split-<split>/predictions.csv          the same as a table (a `score_<class>` column a class)
    """

    type_name = "InferenceResult"
    kfp_schema_title = "system.Dataset"
    RECORD = "inference.json"

    @property
    def record(self) -> dict[str, Any]:
        return self.read_json(self.RECORD)


class PushedModel(Artifact):
    """Where a Pusher put a model: `{uri}/push.json` {"pushed", "version", "serving_dir", "model", "reason"}."""

    type_name = "PushedModel"
    kfp_schema_title = "system.Model"
    RECORD = "push.json"

    @property
    def record(self) -> dict[str, Any]:
        return self.read_json(self.RECORD)

    @property
    def pushed(self) -> bool:
        return bool(self.record["pushed"])

    def gone_elsewhere(self) -> str | None:
        """Its folder gone from a local destination (not an object store's): a cached Pusher said pushed=True of it."""
        folder = str(self.record.get("serving_dir") or "")  # push.json: intact, as the manifest was checked first
        gone = self.pushed and folder and "://" not in folder and not Path(folder).is_dir()
        return f"the model it pushed to {folder} is gone" if gone else None


# Every type above, by name (run records name their artifacts' types); defined last, so only this module's.
ARTIFACT_TYPES: dict[str, type[Artifact]] = {cls.type_name: cls for cls in (Artifact, *Artifact.__subclasses__())}
