"""Every code path, `file:line` and dotted `kflow.` name that the docs or the code's comments mention exists.

A reference is a repository path that starts with one of the repository's top-level folders
(`components/trainer/loop.py`, `pipeline/app/`, `tests/e2e/test_csv_pipeline.py:40`), or a dotted name under
`kflow.` (`kflow.pipeline.dsl.artifacts`, `kflow.components.trainer.executor:run`). Paths are looked up from the
repository's root; a `:line` must be within the file; a dotted name must import (and its `:attribute` exist), or
be an entry-point group that pyproject.toml declares. Paths a page writes as examples of the user's own files
(`runs/…`, `my_…`) start with none of the folders and are not references. Files that git ignores are not read.
"""

from __future__ import annotations

import importlib
import re
import subprocess
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FOLDERS = ("pipeline", "components", "schemas", "tests", "bench", "deploy", "docs")
# A path: a top-level folder, then path characters; optionally :line. Placeholders (<run_id>, {SPAN}, *) end it.
PATH = re.compile(rf"(?<![\w./-])((?:{'|'.join(FOLDERS)})/[\w./-]*[\w/])(?::(\d+))?")
# Only the import package's own folders: `kflow.trainer` (a logger), `kflow.dev/…` (labels) are other names.
DOTTED = re.compile(r"(?<![\w.])(kflow\.(?:pipeline|components|schemas)(?:\.[A-Za-z_]\w*)*)(?::([A-Za-z_]\w*))?")
# Generated or recorded text that quotes paths of other machines or of runs, not of this repository.
SKIP = {"docs/reference/config.md", "schemas/config.schema.json", "tests/docs/test_code_references.py"}
# Names shaped like paths that are not: KFP's run-id label on task pods.
NOT_PATHS = {"pipeline/runid"}
SUFFIXES = {".md", ".py", ".yaml", ".yml", ".toml", ".cfg", ".sh", ""}


def _tracked_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    files = []
    for name in listed:
        path = REPO / name
        if name in SKIP or not path.is_file() or path.suffix not in SUFFIXES:
            continue
        if path.suffix == "" and path.parent.name != ".ci" and path.name != "Makefile":
            continue
        files.append(path)
    return files


def _entry_point_groups() -> set[str]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    return set(project.get("entry-points", {}))


def _path_problem(text: str, line: str | None) -> str | None:
    target = REPO / text
    if not target.exists():
        # `components/datasets/csv/ingest` written as a module path is fine when the .py exists.
        if not (REPO / f"{text}.py").exists():
            return "no such file or folder"
        target = REPO / f"{text}.py"
    if line is not None:
        if not target.is_file():
            return "a line number of a folder"
        count = len(target.read_text(errors="replace").splitlines())
        if int(line) > count:
            return f"line {line} past the file's {count} lines"
    return None


def _dotted_problem(name: str, attribute: str | None, groups: set[str]) -> str | None:
    if name in groups:
        return None
    parts = name.split(".")
    # The longest importable prefix; the rest must be attributes (kflow.pipeline.api.Pipeline).
    for cut in range(len(parts), 1, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for part in [*parts[cut:], *([attribute] if attribute else [])]:
            if not hasattr(obj, part):
                return f"{'.'.join(parts[:cut])} has no {part}"
            obj = getattr(obj, part)
        return None
    return "does not import"


def _references() -> list[tuple[str, int, str, str | None, str]]:
    found = []
    for path in _tracked_files():
        relative = str(path.relative_to(REPO))
        for number, text in enumerate(path.read_text(errors="replace").splitlines(), 1):
            for match in PATH.finditer(text):
                if match.group(1) in NOT_PATHS:
                    continue
                found.append((relative, number, "path", match.group(2), match.group(1).rstrip(".")))
            for match in DOTTED.finditer(text):
                found.append((relative, number, "dotted", match.group(2), match.group(1)))
    return found


def test_the_scan_finds_references_of_both_kinds():
    kinds = {kind for _, _, kind, _, _ in _references()}
    assert kinds == {"path", "dotted"}


def test_every_mentioned_code_path_and_dotted_name_exists():
    groups = _entry_point_groups()
    broken = []
    for where, number, kind, extra, text in _references():
        problem = _path_problem(text, extra) if kind == "path" else _dotted_problem(text, extra, groups)
        if problem:
            broken.append(f"{where}:{number}: {text}{':' + extra if extra else ''}: {problem}")
    assert not broken, "references to code that does not exist:\n" + "\n".join(broken)


@pytest.mark.parametrize(
    ("text", "ok"),
    [("components/trainer/loop.py", True), ("components/trainer/nope.py", False), ("pipeline/app/", True)],
)
def test_the_path_check_tells_a_real_path_from_a_stale_one(text, ok):
    assert (_path_problem(text, None) is None) == ok
