"""trainer.module checked without running it (module_source_checks.py): a module kflow cannot call as it will, or
that imports a package not installed, is one line naming its file and line, as `kflow validate` says it (before, it
passed validate and failed at train, after the data steps: KerasTuner's `build_model(hp)`, `import
tensorflow_decision_forests`)."""

from __future__ import annotations

import pytest

from kflow.components.datasets.user_module import module_problems
from kflow.components.transform.module_check import preprocessing_problems

BODY = "    return None\n"


def problems_of(tmp_path, source, check=module_problems):
    path = tmp_path / "my_model.py"
    path.write_text(source)
    return [problem.replace(str(tmp_path) + "/", "") for problem in check(str(path))]


@pytest.mark.parametrize(
    "signature",
    ["schema, options", "schema, options, extra=None", "*args", "schema, *rest", "schema, options, *, flag=1",
     "schema, options, /", "schema, options, **kwargs"],
)  # fmt: skip
def test_a_build_model_kflow_can_call_passes(tmp_path, signature):
    source = f"import keras\n\n\ndef build_model({signature}):\n{BODY}\n\ndef loss(weight=1.0):\n{BODY}"
    assert problems_of(tmp_path, source) == []


@pytest.mark.parametrize(
    ("signature", "said"),
    [("hp", "build_model(hp) takes 1 positional argument(s), not 2"),
     ("", "build_model() takes 0 positional argument(s), not 2"),
     ("schema, options, hp", "build_model(schema, options, hp) requires 3 argument(s), not 2"),
     ("schema, options, *, hp", "build_model(schema, options, *, hp) requires the keyword argument(s) hp")],
    ids=["keras_tuner", "none", "three", "keyword"],
)  # fmt: skip
def test_a_build_model_kflow_cannot_call_is_one_line_naming_its_def(tmp_path, signature, said):
    source = f"import keras\n\n\ndef build_model({signature}):\n{BODY}"
    assert problems_of(tmp_path, source) == [f"my_model.py:4: {said}; kflow calls build_model(schema, options)"]


def test_a_loss_or_metrics_that_takes_arguments_is_one_line(tmp_path):
    """keras.io's custom loss is a function of (y_true, y_pred); loss() is what kflow calls for it."""
    source = (
        f"def build_model(schema, options):\n{BODY}\n\ndef loss(y_true, y_pred):\n{BODY}\n\ndef metrics(m):\n{BODY}"
    )
    assert problems_of(tmp_path, source) == [
        "my_model.py:5: loss(y_true, y_pred) requires 2 argument(s), not 0; kflow calls loss() and trains with what "
        "it returns (a function of yours: def loss(): return it)",
        "my_model.py:9: metrics(m) requires 1 argument(s), not 0; kflow calls metrics() and trains with what it "
        "returns (a function of yours: def metrics(): return it)",
    ]


def test_a_top_level_import_of_a_package_not_installed_is_one_line_naming_it(tmp_path):
    source = (
        "import keras\nimport tensorflow_decision_forests as tfdf\nfrom kflow_no_such_package.sub import thing\n"
        "from . import sibling\ntry:\n    import kflow_not_installed_either\nexcept ImportError:\n    pass\n\n\n"
        f"def build_model(schema, options):\n    import kflow_imported_when_called\n{BODY}"
    )
    assert problems_of(tmp_path, source) == [
        "my_model.py:2: imports tensorflow_decision_forests, which is not installed here (ModuleNotFoundError: No "
        "module named 'tensorflow_decision_forests')",
        "my_model.py:3: imports kflow_no_such_package, which is not installed here (ModuleNotFoundError: No module "
        "named 'kflow_no_such_package')",
    ]


def test_transform_modules_get_the_same_checks(tmp_path):
    source = f"import kflow_no_such_package\n\n\ndef preprocessing_fn(inputs):\n{BODY}"
    assert problems_of(tmp_path, source, preprocessing_problems) == [
        "my_model.py:4: preprocessing_fn(inputs) takes 1 positional argument(s), not 2; kflow calls "
        "preprocessing_fn(inputs, analyzers)",
        "my_model.py:1: imports kflow_no_such_package, which is not installed here (ModuleNotFoundError: No module "
        "named 'kflow_no_such_package')",
    ]


def test_a_module_that_fails_as_it_is_imported_is_one_line_naming_its_line():
    """What no check before the run sees (an import inside a package that is installed, a top-level statement that
    raises) reaches the Trainer as the one line other module errors are (before: a raw ModuleNotFoundError)."""
    from kflow.components.datasets.user_module import UserModuleError, load_module

    source = "import keras\nimport json.no_such_submodule\n\n\ndef build_model(schema, options):\n    return None\n"
    with pytest.raises(UserModuleError) as refused:
        load_module(source, "my_model.py")
    said = "trainer.module: my_model.py:2: ModuleNotFoundError: No module named 'json.no_such_submodule'"
    assert str(refused.value) == said
