"""The docs: the site builds strict, the config reference is the schema's, and the `kflow` commands they show run.

A fenced code block of README.md, deploy/README.md, bench/README.md or docs/**/*.md "runs a kflow command" when
one of its lines starts with `kflow ` or `$ kflow ` or calls `.venv/bin/kflow`. Such a block is either marked
illustrative (the line `<!-- illustrative -->` just before its fence) or run here, with bash, in a temporary
folder that sees the repository's pipeline/ and tests/ (so `pipeline/configs/demo.yaml` is found, and `runs/`
is written there), where `kflow` and `.venv/bin/kflow` are this interpreter's kflow. It must exit 0, or the code
the line `<!-- exits N -->` just before the fence says. Blocks with `kflow run` (they train), and the history
commands that read its runs (show, runs, diff, gc), run in the slow test, page by page in one folder; the others
in make test. Every block's kflow subcommands must exist, illustrative or not. (docs/extending.md, "Writing these
docs", says the same for authors.)
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from kflow.pipeline.app.config_reference import REGENERATE, config_reference, documented_schema
from kflow.pipeline.dsl.config import load_config

REPO = Path(__file__).resolve().parents[2]
PAGES = sorted(
    [REPO / "README.md", REPO / "deploy" / "README.md", REPO / "bench" / "README.md", *(REPO / "docs").rglob("*.md")]
)
ILLUSTRATIVE = "<!-- illustrative -->"
EXITS = re.compile(r"^<!-- exits (\d+) -->$")
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})(.*)$")
KFLOW_LINE = re.compile(r"^\s*(\$\s+)?kflow(\s|$)|\.venv/bin/kflow(\s|$)")
# Commands that need earlier runs (or make them): run in the slow test, after the page's earlier blocks.
SLOW_COMMANDS = {"run", "show", "runs", "diff", "gc"}
GLOBAL_OPTIONS = {"-v", "--verbose", "-q", "--quiet"}
FAST_BLOCK_SECONDS = 120


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # of the opening fence, 1-based
    info: str
    text: str
    marker: str  # the line just before the fence, stripped

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"

    @property
    def illustrative(self) -> bool:
        return self.marker == ILLUSTRATIVE

    @property
    def expected_exit(self) -> int:
        found = EXITS.match(self.marker)
        return int(found.group(1)) if found else 0

    def commands(self) -> list[str]:
        """The block's logical lines (continuations joined), without blank and comment-only lines."""
        joined, current = [], ""
        for raw in self.text.splitlines():
            current += raw.rstrip()
            if current.endswith("\\"):
                current = current[:-1] + " "
                continue
            if current.strip() and not current.strip().startswith("#"):
                joined.append(current.strip())
            current = ""
        if current.strip():
            joined.append(current.strip())
        return joined

    @property
    def runs_kflow(self) -> bool:
        return any(KFLOW_LINE.search(line) for line in self.text.splitlines())

    def subcommands(self) -> list[str | None]:
        """The kflow subcommand of each kflow command line (None for `kflow --version` and the like)."""
        found = []
        for line in self.commands():
            if not KFLOW_LINE.search(line):
                continue
            try:
                words = shlex.split(line.removeprefix("$ "), comments=True)
            except ValueError:
                words = line.removeprefix("$ ").split()
            starts = [index for index, word in enumerate(words) if word == "kflow" or word.endswith("/kflow")]
            if not starts:
                continue
            rest = [word for word in words[starts[0] + 1 :] if word not in GLOBAL_OPTIONS]
            found.append(rest[0] if rest and not rest[0].startswith("-") else None)
        return found

    @property
    def slow(self) -> bool:
        return bool(SLOW_COMMANDS & set(self.subcommands()))


def code_blocks(page: Path) -> list[Block]:
    """Every fenced code block of a Markdown page."""
    lines = page.read_text().splitlines()
    blocks, index = [], 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        fence = opening.group(2)
        body, end = [], index + 1
        while end < len(lines) and not re.match(rf"^\s*{re.escape(fence[0])}{{{len(fence)},}}\s*$", lines[end]):
            body.append(lines[end])
            end += 1
        indent = len(opening.group(1))
        text = "\n".join(line[indent:] if line[:indent].isspace() else line for line in body)
        marker = lines[index - 1].strip() if index else ""
        blocks.append(Block(page, index + 1, opening.group(3).strip(), text, marker))
        index = end + 1
    return blocks


def kflow_blocks() -> list[Block]:
    return [block for page in PAGES for block in code_blocks(page) if block.runs_kflow]


def subcommands_of_the_cli() -> set[str]:
    import argparse

    from kflow.pipeline.cli.main import _parser

    (choices,) = [action.choices for action in _parser()._actions if isinstance(action, argparse._SubParsersAction)]
    return set(choices)


BLOCKS = kflow_blocks()
RUN = [block for block in BLOCKS if not block.illustrative]
FAST = [block for block in RUN if not block.slow]
SLOW_PAGES = sorted({block.page for block in RUN if block.slow})


def workspace(folder: Path) -> dict[str, str]:
    """A folder where the docs' relative paths work and `kflow` is this interpreter's; the environment to run in."""
    for name in ("pipeline", "tests"):
        (folder / name).symlink_to(REPO / name)
    bin_dir = folder / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    kflow = bin_dir / "kflow"
    kflow.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m kflow.pipeline.cli.main "$@"\n')
    kflow.chmod(0o755)
    return {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "TF_CPP_MIN_LOG_LEVEL": "2",
        "NO_COLOR": "1",
        "KFLOW_PROGRESS": "plain",
    }


def execute(block: Block, folder: Path, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", block.text],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def check_exit(block: Block, done: subprocess.CompletedProcess) -> None:
    assert done.returncode == block.expected_exit, (
        f"{block.where}: exit {done.returncode}, expected {block.expected_exit}:\n{block.text}\n"
        f"--- stdout\n{done.stdout[-3000:]}\n--- stderr\n{done.stderr[-3000:]}"
    )


def run_block(block: Block, folder: Path, env: dict[str, str], timeout: float) -> None:
    check_exit(block, execute(block, folder, env, timeout))


# --- the site -------------------------------------------------------------------------------------------------


def test_the_site_builds_with_mkdocs_strict(tmp_path):
    """Broken links between pages, pages missing from the nav and links out of docs/ all fail the build."""
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "-f", str(REPO / "mkdocs.yml"), "-d",
         str(tmp_path / "site")],
        capture_output=True, text=True, timeout=300, cwd=REPO,
    )  # fmt: skip
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stdout}\n{done.stderr}"
    assert (tmp_path / "site" / "reference" / "config" / "index.html").is_file()


def test_every_page_is_in_the_nav():
    nav = yaml.safe_load((REPO / "mkdocs.yml").read_text())["nav"]
    listed = {next(iter(entry.values())) for entry in nav}
    pages = {str(path.relative_to(REPO / "docs")) for path in (REPO / "docs").rglob("*.md")}
    assert pages == listed


def test_the_readme_stays_short_and_links_every_page():
    readme = (REPO / "README.md").read_text()
    assert len(readme.encode()) <= 15_000
    pages = {str(path.relative_to(REPO)) for path in (REPO / "docs").rglob("*.md")}
    assert pages <= set(re.findall(r"\]\((docs/[^)#]+)\)", readme))


@pytest.mark.parametrize("page", ["README.md", "deploy/README.md", "bench/README.md"])
def test_the_links_of_the_pages_outside_the_site_resolve(page):
    """mkdocs checks the links between docs/ pages; these pages are read on their own (in a clone, on a forge)."""
    path = REPO / page
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", path.read_text())
    missing = [target for target in targets if "://" not in target and not (path.parent / target).exists()]
    assert not missing, f"{page}: links to missing files: {missing}"


# --- the config reference -------------------------------------------------------------------------------------


def test_the_config_reference_is_generated_from_the_schema():
    committed = (REPO / "docs" / "reference" / "config.md").read_text()
    assert committed == config_reference(documented_schema()), (
        f"docs/reference/config.md is stale: regenerate it with `{REGENERATE}`"
    )


def test_the_reference_has_a_section_per_top_level_field_and_a_row_per_field():
    schema = documented_schema()
    assert schema == json.loads((REPO / "schemas" / "config.schema.json").read_text())
    page = config_reference(schema)
    for name in schema["properties"]:
        assert f"\n## `{name}`\n" in page
    assert "| `trainer.epochs` | integer | `3` | ≥ 1 |" in page
    assert "| `data.filters.max_invalid_fraction` | number | `0.01` | ≥ 0, ≤ 1 |" in page


def test_the_reference_renders_sections_alternatives_enums_and_bounds():
    schema = {
        "description": "A toy.",
        "type": "object",
        "required": ["name"],
        "properties": {
            "name": {"type": "string", "pattern": "^[a-z]+$", "description": "Its name."},
            "train": {
                "type": "object",
                "default": {},
                "description": "How it trains.",
                "properties": {
                    "epochs": {"type": "integer", "exclusiveMinimum": 0, "maximum": 9, "default": 3},
                    "mode": {"enum": ["a", "b", None], "default": None, "description": "a | b, or <none>"},
                    "rate": {"type": ["number", "null"], "default": None},
                },
            },
            "when": {"anyOf": [{"type": "integer", "minimum": 1}, {"const": "auto"}], "default": "auto"},
            "memory": {"type": "string", "pattern": "^[0-9]+(Mi|Gi)?$"},
        },
    }
    page = config_reference(schema)
    assert "| `name` | string, required |   | matches `^[a-z]+$` | Its name. |" in page
    assert "## `train`\n\nHow it trains.\n\nMapping; default `{}`." in page
    assert "| `train.epochs` | integer | `3` | > 0, ≤ 9 |" in page
    assert "| `train.mode` | string or null | `null` | `a`, `b`, `null` | a \\| b, or &lt;none> |" in page
    assert "| `train.rate` | number or null | `null` |" in page
    assert "| `when` | integer or string | `auto` | integer: ≥ 1; string: `auto` |" in page
    assert "<code>^&#91;0-9]+(Mi&#124;Gi)?$</code>" in page  # a `|` in code cannot split the table's cells


# --- the code blocks ------------------------------------------------------------------------------------------


def test_the_blocks_that_run_kflow_are_found():
    assert len(RUN) >= 10 and FAST and SLOW_PAGES
    sample = Block(REPO / "README.md", 1, "sh", "$ kflow validate x.yaml\nkflow: not a command", "")
    assert sample.runs_kflow and sample.subcommands() == ["validate"]
    continued = Block(REPO / "README.md", 1, "sh", ".venv/bin/kflow -q run a.yaml \\\n  --set x=1  # note", "")
    assert [line.split() for line in continued.commands()] == [
        [".venv/bin/kflow", "-q", "run", "a.yaml", "--set", "x=1", "#", "note"]
    ]
    assert continued.subcommands() == ["run"] and continued.slow
    assert not Block(REPO / "README.md", 1, "text", "a kflow: b\n  kflowers", "").runs_kflow


@pytest.mark.parametrize("block", BLOCKS, ids=[block.where for block in BLOCKS])
def test_every_kflow_block_names_real_subcommands_and_runs_or_is_illustrative(block):
    known = subcommands_of_the_cli()
    unknown = [name for name in block.subcommands() if name is not None and name not in known]
    assert not unknown, f"{block.where}: unknown kflow subcommand(s) {unknown} (kflow has: {', '.join(sorted(known))})"
    if block.illustrative:
        return
    assert block.marker == "" or EXITS.match(block.marker) or not block.marker.startswith("<!--"), (
        f"{block.where}: unknown marker {block.marker!r} (use {ILLUSTRATIVE} or <!-- exits N -->)"
    )
    others = [line for line in block.commands() if not KFLOW_LINE.search(line)]
    assert not others, (
        f"{block.where}: a block that runs holds only kflow commands; mark it {ILLUSTRATIVE} or move these lines "
        f"to a block of their own: {others}"
    )


def test_an_unknown_subcommand_is_caught():
    block = Block(REPO / "README.md", 1, "sh", "kflow lint pipeline/configs/demo.yaml", ILLUSTRATIVE)
    with pytest.raises(AssertionError, match="unknown kflow subcommand"):
        test_every_kflow_block_names_real_subcommands_and_runs_or_is_illustrative(block)


@pytest.fixture(scope="module")
def fast_runs(tmp_path_factory) -> dict[Block, subprocess.CompletedProcess]:
    """Every fast block run once, two at a time (each is a few seconds of one process), each in a folder of its own."""

    def run(block: Block) -> subprocess.CompletedProcess:
        folder = tmp_path_factory.mktemp("block")
        return execute(block, folder, workspace(folder), FAST_BLOCK_SECONDS)

    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip(FAST, pool.map(run, FAST), strict=True))


@pytest.mark.parametrize("block", FAST, ids=[block.where for block in FAST])
def test_the_fast_kflow_blocks_run(block, fast_runs):
    check_exit(block, fast_runs[block])


@pytest.mark.slow  # They train (kflow run), about a minute a run on two cores.
@pytest.mark.parametrize("page", SLOW_PAGES, ids=[str(page.relative_to(REPO)) for page in SLOW_PAGES])
def test_the_kflow_run_blocks_run(page, tmp_path):
    env = workspace(tmp_path)
    for block in [block for block in RUN if block.page == page and block.slow]:
        run_block(block, tmp_path, env, 1800)


# --- configs shown in full ------------------------------------------------------------------------------------


def whole_configs() -> list[tuple[str, str]]:
    """(where, YAML text) of every YAML document shown in the docs that is a whole config (a top-level `name`)."""
    found = []
    for page in PAGES:
        for block in code_blocks(page):
            if block.info in ("yaml", "yml"):
                for text in re.split(r"^---\s*$", block.text, flags=re.MULTILINE):
                    document = yaml.safe_load(text)
                    if isinstance(document, dict) and "name" in document:
                        found.append((block.where, text))
    return found


CONFIGS = whole_configs()


@pytest.mark.parametrize(("where", "text"), CONFIGS, ids=[where for where, _ in CONFIGS])
def test_every_config_shown_whole_is_valid(where, text, tmp_path):
    from kflow.pipeline.app.standard_pipeline import build_pipeline

    (tmp_path / "data").symlink_to(REPO / "pipeline" / "configs" / "data")  # as beside the shipped configs
    path = tmp_path / "config.yaml"
    path.write_text(text)
    config = load_config(path)
    source = config.data.source.path if config.data else None
    build_pipeline(config, local_data=bool(source) and Path(source).exists())


def test_the_readme_config_is_the_shipped_iris_config():
    """README.md shows pipeline/configs/iris.yaml, less its `data.shards_per_split`."""
    (shown,) = [yaml.safe_load(text) for where, text in CONFIGS if where.startswith("README.md")]
    shipped = yaml.safe_load((REPO / "pipeline" / "configs" / "iris.yaml").read_text())
    shipped["data"].pop("shards_per_split", None)
    assert shown == shipped, "README.md's config and pipeline/configs/iris.yaml differ: keep them equal"
