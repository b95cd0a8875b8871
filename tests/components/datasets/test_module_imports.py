"""The files a user's module imports travel with it (module_imports.py): a helper beside trainer.module or
transform.module was refused by validate unless PYTHONPATH held it ("imports helpers, which is not installed here"),
and where it was on PYTHONPATH, pipeline.yaml carried the module without it (compile warned; the pods' import
failed) and a model trained with it loaded only where the helper still was. TFX packages a module file's folder
for the same reason."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
import yaml

from kflow.components.datasets.module_imports import imported_sources, module_parameters
from kflow.components.datasets.user_module import module_problems
from kflow.pipeline.dsl.artifacts import Model
from tests.conftest import REPO

IRIS = REPO / "pipeline" / "configs" / "data" / "iris.csv"
HELPERS = """import keras

from layout import UNITS


def hidden(x):
    return keras.layers.Dense(UNITS, activation="relu")(x)
"""
MODEL = """import keras
import numpy  # installed: not the user's own file
import helpers
from shapes import sizes


def build_model(schema, options):
    inputs = {f["name"]: keras.Input(shape=(1,), name=f["input_name"]) for f in options["features"]}
    hidden = helpers.hidden(keras.layers.concatenate(list(inputs.values())))
    return keras.Model(inputs, keras.layers.Dense(sizes.classes(options), activation="softmax")(hidden))
"""
PREPROCESSING = """from scaling import scaled


def preprocessing_fn(inputs, analyzers):
    return {name: scaled(inputs[name], analyzers) for name in ("sepal_length", "petal_length")}
"""
SCALING = """import keras


def scaled(x, analyzers):
    return keras.layers.Normalization(mean=analyzers.mean(x), variance=analyzers.variance(x))(x)
"""


def user_files(folder):
    """A module beside its helpers: one that imports another (layout.py), a package and its submodule (shapes/)."""
    (folder / "shapes").mkdir(parents=True)
    (folder / "helpers.py").write_text(HELPERS)
    (folder / "layout.py").write_text("UNITS = 8\n")
    (folder / "shapes" / "__init__.py").write_text("")
    (folder / "shapes" / "sizes.py").write_text('def classes(options):\n    return len(options["head"]["classes"])\n')
    (folder / "my_model.py").write_text(MODEL)
    (folder / "prep.py").write_text(PREPROCESSING)
    (folder / "scaling.py").write_text(SCALING)
    return folder / "my_model.py"


def test_a_modules_own_files_are_found_beside_it_and_only_they(tmp_path):
    module = user_files(tmp_path / "models")
    assert str(tmp_path / "models") not in sys.path
    assert module_problems(str(module)) == []  # validate: before, "imports helpers, which is not installed here"
    assert imported_sources(MODEL, str(module)) == {
        "helpers.py": HELPERS,
        "layout.py": "UNITS = 8\n",  # imported by helpers.py
        "shapes/__init__.py": "",
        "shapes/sizes.py": (module.parent / "shapes" / "sizes.py").read_text(),
    }
    assert set(module_parameters(str(module))) == {"module_source", "module_imports"}
    (module.parent / "helpers.py").unlink()
    assert module_problems(str(module)) == [
        f"{module}:3: imports helpers, which is not installed here (ModuleNotFoundError: No module named 'helpers')"
    ]


def test_a_module_without_helpers_has_no_imports_parameter(tmp_path):
    (tmp_path / "plain.py").write_text("import keras\n\n\ndef build_model(schema, options):\n    return None\n")
    assert module_parameters(str(tmp_path / "plain.py")) == {"module_source": (tmp_path / "plain.py").read_text()}


def test_a_module_loads_with_its_travelled_files_where_they_are_not(tmp_path):
    """A process of another machine (a pod): the helpers exist only in the parameter; a module of the same name
    imported from elsewhere before is not the one the user's module gets."""
    module = user_files(tmp_path / "models")
    imports = imported_sources(MODEL, str(module))
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "layout.py").write_text("UNITS = 99\n")
    code = (
        "import json, sys\n"
        "sys.path.insert(0, sys.argv[1]); import layout; assert layout.UNITS == 99\n"
        "from kflow.components.datasets.user_module import load_module\n"
        "source, imports = json.load(open(sys.argv[2]))\n"
        "module = load_module(source, 'my_model.py', imports)\n"
        "print(module.helpers.UNITS, module.helpers.__file__)\n"
    )
    given = tmp_path / "given.json"
    given.write_text(json.dumps([MODEL, imports]))
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "elsewhere"), str(given)],
        capture_output=True, text=True, cwd=tmp_path / "elsewhere", timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    units, where = done.stdout.split()
    assert units == "8" and "kflow-module-imports-" in where and str(tmp_path) not in where


@pytest.mark.slow  # ~22 s: a run and a predict; make test loads travelled files (above)
@pytest.mark.parametrize("field", ["trainer.module", "transform.module"])
def test_a_model_trained_with_helpers_scores_where_they_are_gone(tmp_path, run_kflow, field):
    """kflow run with a module importing its helpers (beside it, not on PYTHONPATH), then kflow predict with the
    model folder after the helpers are removed: the model carries them (assets/<module>_imports/)."""
    user_files(tmp_path / "models")
    module = "models/my_model.py" if field == "trainer.module" else "models/prep.py"
    section = field.split(".")[0]
    config = {
        "name": "helpers",
        "pipeline_root": str(tmp_path / "runs"),
        "data": {"dataset": "csv", "source": {"path": str(IRIS)}, "label": "species", "problem_type": "classification"},
        "trainer": {"epochs": 2},
        "evaluator": {"baseline": "none"},
    }
    config.setdefault(section, {})["module"] = module
    (tmp_path / "helpers.yaml").write_text(yaml.safe_dump(config))
    done = run_kflow("run", tmp_path / "helpers.yaml")
    assert done.returncode == 0, done.stderr[-3000:]
    (model_folder,) = (tmp_path / "runs" / "helpers").glob("*/train/model")
    stem = "user_module" if section == "trainer" else "preprocessing_fn"
    carried = sorted(p.relative_to(model_folder / "assets").as_posix()
                     for p in (model_folder / "assets").glob(f"{stem}_imports/**/*.py"))  # fmt: skip
    expected = (
        ["helpers.py", "layout.py", "shapes/__init__.py", "shapes/sizes.py"] if section == "trainer" else ["scaling.py"]
    )
    assert carried == [f"{stem}_imports/{name}" for name in expected]
    digest = Model(model_folder).module_digest
    shutil.rmtree(tmp_path / "models")
    scored = run_kflow("predict", tmp_path / "helpers.yaml", "--model", model_folder, "--data", IRIS,
                       "-o", tmp_path / "scored")  # fmt: skip
    assert scored.returncode == 0, scored.stderr[-3000:]
    assert "scored 150 row(s)" in scored.stdout + scored.stderr
    if section == "trainer":  # the baseline check's digest covers the helpers: an edit of one is seen
        (model_folder / "assets" / "user_module_imports" / "layout.py").write_text("UNITS = 9\n")
        assert Model(model_folder).module_digest not in (digest, None)


@pytest.mark.slow  # ~30 s: a compiled pipeline's tasks played as processes
def test_a_compiled_pipeline_trains_with_the_helpers_it_carries(tmp_path, run_kflow):
    """kflow rehearse plays pipeline.yaml as the pods would: each task a process given only its parameters, in a
    folder where the module's helpers are not."""
    user_files(tmp_path / "models")
    config = {
        "name": "helpers",
        "data": {"dataset": "csv", "source": {"path": str(IRIS)}, "label": "species", "problem_type": "classification"},
        "trainer": {"epochs": 2, "module": "models/my_model.py"},
        "evaluator": {"baseline": "none"},
    }
    (tmp_path / "helpers.yaml").write_text(yaml.safe_dump(config))
    done = run_kflow("rehearse", tmp_path / "helpers.yaml", "--processes", "--root", tmp_path / "r")
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines()[-1] in ("BLESSED", "NOT_BLESSED")
    (model_folder,) = (tmp_path / "r" / "play").rglob("user_module_imports")
    assert (model_folder / "helpers.py").read_text() == HELPERS
