"""Spans of a source, as TFX's ExampleGen reads them: `data.source.path` patterns with `{SPAN}` and `{VERSION}`.

    data/survey-{SPAN}.csv              spans 1, 2, 3 … (the digits in the name, leading zeros allowed)
    data/span-{SPAN}/v{VERSION}/*.csv   each span's highest version: a span re-delivered as a new version
    data/sales-{YYYY}-{MM}.csv          a span a month, numbered by its date's digits (202401), as TFX's date
    data/{YYYY}/{MM}/{DD}/*.parquet     specs; a day's span 20240115, a year's ({YYYY} alone) 2024

A span is a unit of data that arrives over time (a day, a month); `data.spans` says which spans a run reads:
`latest` (the highest span), `all`, `{last: N}` (the N highest) or `{from: A, to: B}` (A to B, inclusive).
Each span's files are named by the pattern with its own digits put back (`span_path`), so an ingest of one span
reads, and is fingerprinted by, that span's files only: a new span leaves the others' ingests cached.
"""

from __future__ import annotations

import glob
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SPAN, VERSION = "{SPAN}", "{VERSION}"
DATE_SPECS = {"{YYYY}": r"(?P<yyyy>\d{4})", "{MM}": r"(?P<mm>\d{2})", "{DD}": r"(?P<dd>\d{2})"}
FIELD = "data.source.path"


@dataclass(frozen=True)
class Span:
    number: int
    text: str  # the digits as the files spell them ("03")
    version: str | None  # the highest version's digits, when the pattern has {VERSION}
    path: str  # the pattern with this span's (and version's) digits: what its ingest reads
    files: tuple[str, ...]

    @property
    def name(self) -> str:
        """The span as run records, `kflow plan` and the Examples' `spans` spell it."""
        return str(self.number)


def has_spans(path: str | None) -> bool:
    return bool(path) and (SPAN in str(path) or "{YYYY}" in str(path))


def check_pattern(pattern: str) -> None:
    """ValueError, one line naming the field, for a pattern kflow cannot read spans from."""
    dated = "{YYYY}" in pattern
    if dated and SPAN in pattern:
        raise ValueError(f"{FIELD}: a span pattern has {SPAN} or date specs ({{YYYY}}, {{MM}}, {{DD}}), not both")
    if not dated and pattern.count(SPAN) != 1:
        raise ValueError(f"{FIELD}: a span pattern has {SPAN} exactly once, got {pattern!r}")
    if dated and (any(pattern.count(spec) > 1 for spec in DATE_SPECS) or ("{DD}" in pattern and "{MM}" not in pattern)):
        raise ValueError(f"{FIELD}: a date has {{YYYY}} once, then {{MM}} and {{DD}} at most once, got {pattern!r}")
    if pattern.count(VERSION) > 1:
        raise ValueError(f"{FIELD}: a span pattern has {VERSION} at most once, got {pattern!r}")
    leftover = re.sub(r"\{(SPAN|VERSION|YYYY|MM|DD)\}", "", pattern)
    if "{" in leftover or "}" in leftover:
        raise ValueError(
            f"{FIELD}: only {SPAN} (or {{YYYY}}, {{MM}}, {{DD}}) and {VERSION} may stand in braces, got {pattern!r}"
        )
    first = pattern.index(SPAN) if SPAN in pattern else pattern.index("{YYYY}")
    if VERSION in pattern and pattern.index(VERSION) < first:
        raise ValueError(f"{FIELD}: {VERSION} comes after the span (a version of a span), got {pattern!r}")


def _regex(pattern: str) -> re.Pattern[str]:
    """The pattern as a regular expression over paths: glob wildcards stay within one path segment."""
    parts = re.split(r"(\{SPAN\}|\{VERSION\}|\{YYYY\}|\{MM\}|\{DD\}|\*\*|\*|\?)", pattern)
    wildcards = {SPAN: r"(?P<span>\d+)", VERSION: r"(?P<version>\d+)", "**": r".*", "*": r"[^/]*", "?": r"[^/]",
                 **DATE_SPECS}  # fmt: skip
    return re.compile("".join(wildcards.get(part, re.escape(part)) for part in parts) + r"\Z")


def _span_of(match: re.Match[str]) -> str:
    """The span's digits: {SPAN}'s, or its date's (2024, 202401, 20240115)."""
    found = match.groupdict()
    return found["span"] if found.get("span") is not None else "".join(found.get(k) or "" for k in ("yyyy", "mm", "dd"))


def _filled(pattern: str, match: re.Match[str]) -> str:
    """The pattern with a span's own digits (and its version's) put back: the files its ingest reads."""
    found = match.groupdict()
    for spec, group in ((SPAN, "span"), ("{YYYY}", "yyyy"), ("{MM}", "mm"), ("{DD}", "dd"), (VERSION, "version")):
        pattern = pattern.replace(spec, found.get(group) or "")
    return pattern


def find_spans(pattern: str) -> list[Span]:
    """Every span the pattern matches, in order, each at its highest version. ValueError (one line) for a bad
    pattern or one that matches no file."""
    check_pattern(pattern)
    pattern = str(Path(pattern).expanduser())
    regex = _regex(pattern)
    found: dict[int, dict[int, list[tuple[str, str, str]]]] = {}
    for name in sorted(glob.glob(re.sub(r"\{(SPAN|VERSION|YYYY|MM|DD)\}", "*", pattern), recursive=True)):
        match = regex.match(name)
        if match is None or not Path(name).exists():
            continue
        version = match.groupdict().get("version")
        versions = found.setdefault(int(_span_of(match)), {})
        versions.setdefault(int(version) if version is not None else -1, []).append((name, _span_of(match), match))
    if not found:
        raise ValueError(f"{FIELD}: no file matches the span pattern {pattern!r}")
    spans = []
    for number in sorted(found):
        version_number = max(found[number])
        files = found[number][version_number]
        texts = {text for _, text, _ in files}
        if len(texts) > 1:
            raise ValueError(f"{FIELD}: span {number} is spelled {sorted(texts)} by its files; one spelling a span")
        text, match = files[0][1], files[0][2]
        spans.append(Span(number, text, match["version"] if "version" in match.groupdict() else None,
                          _filled(pattern, match), tuple(name for name, _, _ in files)))  # fmt: skip
    return spans


def select_spans(spans: list[Span], selection: Any) -> list[Span]:
    """The spans `data.spans` selects: latest (default), all, {last: N} or {from: A, to: B}. ValueError naming
    the field when none is selected."""
    selection = "latest" if selection is None else selection
    if selection == "latest":
        chosen = spans[-1:]
    elif selection == "all":
        chosen = list(spans)
    elif isinstance(selection, dict) and "last" in selection:
        chosen = spans[-int(selection["last"]) :]
    elif isinstance(selection, dict):
        low, high = selection.get("from"), selection.get("to")
        chosen = [s for s in spans if (low is None or s.number >= low) and (high is None or s.number <= high)]
    else:
        raise ValueError(f"data.spans: latest, all, {{last: N}} or {{from: A, to: B}}, got {selection!r}")
    if not chosen:
        have = ", ".join(span.name for span in spans)
        raise ValueError(f"data.spans: {describe(selection)} selects none of the spans found ({have})")
    return chosen


def describe(selection: Any) -> str:
    """A data.spans as a config spells it: latest, {last: 2}, {from: 4} (unset bounds left out)."""
    if not isinstance(selection, dict):
        return str(selection or "latest")
    return "{" + ", ".join(f"{key}: {value}" for key, value in selection.items() if value is not None) + "}"


def previous_span(spans: list[Span], newest: Span) -> Span | None:
    """The span before `newest` among all the spans found (drift compares the two), or None for the first."""
    earlier = [span for span in spans if span.number < newest.number]
    return earlier[-1] if earlier else None
