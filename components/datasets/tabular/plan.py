"""What the tabular preprocessing makes of a training split's summaries: each feature's kind and state, the head.

One set of rules for both places that summarise a training split: the Transform's Beam pass
(components/transform, streaming combiners over every record) and, without a transform, the tabular task's own
pass in memory (`TabularTask.prepare`). Both hand these functions the same summaries: a number's count, mean and
variance; a string feature's `StringSummary` (its most frequent values with their counts, how many distinct
values and rows, their characters, its most frequent words); the label's values.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kflow.components.datasets.tabular.dates import (
    DAY_FIRST,
    any_day_first,
    day_number,
    form_of,
    slash_order,
    written_as_date,
)

# The task's data options (trainer.model_options): what the preprocessing makes of the data, so the Transform's too.
DATA_OPTIONS: dict[str, Any] = {
    "class_weighting": "none",
    "max_categories": 100,
    "text_min_chars": 20,
    "max_tokens": 10_000,
}
log = logging.getLogger(__name__)

_CODE = re.compile(r"[A-Za-z0-9_-]*\d[A-Za-z0-9_-]*")  # a long id: letters, digits, `-` and `_`, a digit at least
MIN_IDENTIFIER_ROWS = 20  # A string feature with a distinct value in every one of at least this many rows: an id.
OOV_BUCKETS = 16  # Hashed buckets a high-cardinality categorical feature's values past its vocabulary share.
DATE_SAMPLE = 200  # The most frequent values `dates` looks at.
NO_VALUE = "it has no value in the training split"  # why a column empty there is left out
_FLOAT32_MAX = float(np.finfo(np.float32).max)
WORD = re.compile(r"[a-z0-9']+")


@dataclass
class StringSummary:
    """A string feature over a split: `ranked` its most frequent values (at least max_categories + DATE_SAMPLE of
    them) as (value, count), most frequent first and ties in byte order; `words` its most frequent words likewise."""

    seen: int = 0  # present, non-empty values
    distinct: int = 0
    chars: int = 0  # UTF-8 bytes of every value seen
    spaced: bool = False  # whether any value holds a space
    ranked: list[tuple[str, int]] = field(default_factory=list)
    words: list[tuple[str, int]] = field(default_factory=list)
    # Whether any value is a date with its day first (31/1/2024: date_parts.day_first). The most frequent values
    # of dates each seen once are the first in byte order (1/1/1969, 1/1/1970, …), which never show it.
    day_first: bool = False


def ranked_counts(counts: Counter, limit: int | None = None) -> list[tuple[Any, int]]:
    """(value, count), most frequent first, ties in value order."""
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return ranked if limit is None else ranked[:limit]


def summarize_strings(counts: Counter, options: dict[str, Any]) -> StringSummary:
    """The summary of a feature's value counts (bytes → count), held in memory whole."""
    words: Counter = Counter()
    for value, n in counts.items():
        for word in WORD.findall(value.decode("utf-8", "replace").lower()):
            words[word] += n
    keep = int(options["max_categories"]) + DATE_SAMPLE
    return StringSummary(
        seen=sum(counts.values()),
        distinct=len(counts),
        chars=sum(len(value) * n for value, n in counts.items()),
        spaced=any(b" " in value for value in counts),
        ranked=[(value.decode("utf-8", "replace"), n) for value, n in ranked_counts(counts, keep)],
        words=ranked_counts(words, int(options["max_tokens"])),
        day_first=any_day_first(counts),
    )


def numeric_spec(
    name: str,
    count: int,
    mean: float,
    variance: float,
    codes: list | None = None,
    rows: int | None = None,
    spans: str | None = None,
) -> dict[str, Any]:
    """A number's normalisation (its training mean and variance), or why it is left out (no value, one value in
    every training row or wherever a column only some `spans` hold is present, or a variance past float32's range);
    an integer column's `codes` too (`integer_codes`: [(value, count)] of its training values, None past MAX_CODES);
    `missing` when it has fewer values than the training split's `rows` (the model flags a missing value:
    MissingFlags)."""
    if not count:
        return {"name": name, "kind": "left_out", "left_out": NO_VALUE}
    # One value in every training row: exactly, where its whole values are counted; else to the sum of squares'
    # rounding (a millisecond timestamp's minutes are no constant).
    one = len(codes) == 1 if codes is not None else variance <= 1e-15 * max(1.0, mean**2)
    if rows is not None and count == rows and one:  # nothing to learn from
        return {"name": name, "kind": "left_out", "left_out": f"a constant ({mean:g} in every training row)"}
    if rows is not None and spans and one:
        return {"name": name, "kind": "left_out", "left_out": constant_where_present(f"{mean:g}", count, rows, spans)}
    if not abs(variance) < _FLOAT32_MAX:  # physical constants from 1e-36 to 1e38: no float32 scale holds them
        spread = f"its values' variance, {variance:.3g}, is past float32's range"
        return {"name": name, "kind": "left_out", "left_out": spread}
    spec = {"name": name, "kind": "numeric", "mean": mean, "variance": variance if variance > 1e-12 else 1.0}
    spec |= {"missing": True} if rows is not None and 0 < count < rows else {}
    return spec | ({"codes": kept} if (kept := integer_codes(codes, count)) else {})


def constant_where_present(value: str, count: int, rows: int, spans: str) -> str:
    """Why a column that only some `spans` hold (the union's `kflow_spans` tag), one value wherever present, is left
    out: present or missing, it tells the record's span and nothing else (an export adding `year`, 1977 in every row,
    taught the model "is span 2"). A column of one value missing here and there within each span (a box ticked or
    left empty) is kept: its presence may be informative, and the model flags it (MissingFlags)."""
    held = f"span {spans} alone holds" if "," not in spans else f"spans {spans.replace(',', ', ')} alone hold"
    return f"a constant where present ({value} in {count} of {rows} training rows: {held} the column)"


MAX_CODES = 1000  # The most distinct whole values a number's summary counts (whole_values); past it, none.
MIN_CODE_ROWS = 5  # The training rows each code must average to be learnt as one.
# The columns whose whole values may be codes: an int column, or a float one holding only whole values (pandas writes
# an integer column with a missing value as float64, in Parquet as in CSV: `3.0`; whole_values drops a column at its
# first decimal), so a table trains the same whichever way it was saved.
CODED_KINDS = ("int", "float")


def integer_codes(codes: list | None, count: int) -> list[int] | None:
    """An integer column's values when they may be codes (a user, a district, a product id): from 3 to MAX_CODES
    distinct whole values averaging MIN_CODE_ROWS training rows or more each. Normalised alone, such a column is one
    slope, and an id is no quantity: dslabs' movielens (100,004 ratings) predicts a rating's time from its
    `userId`'s 671 users, which gradient boosting split to R² 0.70 (0.47 without it) and the MLP did not (0.41).
    A count (rooms, children) passes the rule too; it keeps its normalised value beside its one-hot codes."""
    if codes is None or not 3 <= len(codes) <= MAX_CODES or count < MIN_CODE_ROWS * len(codes):
        return None
    return sorted(int(value) for value, _ in codes)


MAX_CODE_SLOTS = 1000  # The one-hot slots all integer columns of codes make together, at most.


def within_code_budget(features: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`features` with the integer codes of the columns with the fewest codes kept, in that order, while all kept
    make at most MAX_CODE_SLOTS one-hot slots (a column's codes and one for any other value); the others' dropped:
    they keep their normalised value alone. A wide table of small integers would otherwise be one-hot past use:
    MNIST's 784 pixel columns written as a CSV (values 0-255) made 200,000 inputs and 73 ms training steps."""
    kept, slots, dropped = list(features), 0, 0
    coded = sorted((i for i, spec in enumerate(features) if spec.get("codes")), key=lambda i: len(features[i]["codes"]))
    for index in coded:
        size = len(features[index]["codes"]) + 1
        if slots + size <= MAX_CODE_SLOTS:
            slots += size
        else:
            kept[index] = {key: value for key, value in features[index].items() if key != "codes"}
            dropped += 1
    if dropped:
        log.info(
            "tabular: %d of %d integer columns of codes are read as numbers alone (one-hot, all would pass %d inputs)",
            dropped, len(coded), MAX_CODE_SLOTS,
        )  # fmt: skip
    return kept


def whole_values(counts: dict[float, int] | None, values: np.ndarray) -> dict[float, int] | None:
    """`counts` of distinct whole values updated with `values` (finite floats); None once a value has decimals or
    there are more than MAX_CODES of them (None stays None)."""
    if counts is None or not len(values):
        return counts
    if not np.all(values == np.round(values)):
        return None
    found, times = np.unique(values, return_counts=True)
    return merge_whole_values(counts, dict(zip(found.tolist(), times.tolist(), strict=True)))


def merge_whole_values(a: dict[float, int] | None, b: dict[float, int] | None) -> dict[float, int] | None:
    if a is None or b is None or len(b) > MAX_CODES:
        return None
    merged = dict(a)
    for value, n in b.items():
        merged[value] = merged.get(value, 0) + n
    return merged if len(merged) <= MAX_CODES else None


def string_spec(
    name: str, summary: StringSummary, options: dict[str, Any], rows: int | None = None, spans: str | None = None
) -> dict[str, Any]:
    """A string feature's kind (categorical, text, or left out: no value, one value in all the training split's
    `rows` or wherever a column only some `spans` hold is present, an identifier) and its vocabulary."""
    if not summary.seen:
        return {"name": name, "kind": "left_out", "left_out": NO_VALUE}
    ranked = [value for value, _ in summary.ranked]
    if summary.distinct == 1 and summary.seen == rows:  # a country column of one country: nothing to learn from
        return {"name": name, "kind": "left_out", "left_out": f"a constant ({ranked[0]!r} in every training row)"}
    if summary.distinct == 1 and spans and rows is not None:
        why = constant_where_present(repr(ranked[0]), summary.seen, rows, spans)
        return {"name": name, "kind": "left_out", "left_out": why}
    limit = int(options["max_categories"])
    mean_chars = summary.chars / summary.seen if summary.seen else 0
    text = mean_chars >= float(options["text_min_chars"])
    many = summary.distinct > limit
    # A few dates (two months, shifts at 08:00 and 18:00) are categories like any; past `limit` distinct ones,
    # most of a new split's dates are unseen, and a category of each generalises to nothing: they are read as
    # numbers (the time, the season, the weekday, the time of day: models/date_parts.py) where they read so.
    if many and dates(ranked):
        return date_spec(name, ranked, summary.distinct, summary.day_first)
    # One code-like value a row (`P-00017`; a UUID or a 20-character hash, letters and digits): an identifier,
    # however long. Phrases all distinct (with spaces), URLs, SMILES or DNA (other marks, or no digit) are text to
    # learn from. (A length rule let ids of 20 characters or more through as text: Quora's `qid` was learnt as a
    # vocabulary of 300 hex fragments.)
    seen = summary.seen
    coded = not text or all(_CODE.fullmatch(value) for value, _ in summary.ranked)
    if seen >= MIN_IDENTIFIER_ROWS and summary.distinct == seen and not summary.spaced and coded:
        return {"name": name, "kind": "left_out", "left_out": f"an identifier ({seen} distinct values in {seen} rows)"}
    if many and text:
        return {"name": name, "kind": "text", "vocabulary": [word for word, _ in summary.words]}
    # Past `limit` values, the rest share hashed out-of-vocabulary buckets (as unseen values do) instead of one.
    buckets = min(OOV_BUCKETS, summary.distinct - limit) if many else 1
    return {"name": name, "kind": "categorical", "vocabulary": ranked[:limit] or ["[none]"], "oov_buckets": buckets}


def date_spec(name: str, ranked: list[str], distinct: int, days_first: bool) -> dict[str, Any]:
    """A column of many distinct dates or times: read as their parts (`DateParts`) when DATE_SAMPLE of its most
    frequent values all but 5 % read as dates, the day first where any value shows it (`days_first`); else left
    out."""
    sample = ranked[:DATE_SAMPLE]
    order = DAY_FIRST if days_first else slash_order(sample)
    read = sum(day_number(value, order) is not None for value in sample)
    if read < 0.95 * len(sample):
        forms = "2024-01-31, 1/31/2024, 31.01.2024, Jan 5 2024, 2024-01-31 12:00, 2:30 PM"
        why = f"it holds dates or times ({distinct} distinct) not written as kflow reads them ({forms})"
        return {"name": name, "kind": "left_out", "left_out": why}
    # Times alone (`14:30`, a Parquet time64) have no date: their time of day is all the model reads of them.
    times = all((form := form_of(value.strip())) is not None and form.year is None for value in sample)
    parts = "the time of day" if times else "the time, the season, the weekday and the time of day"
    log.info("tabular: %r holds %d distinct dates or times: read as %s%s",
             name, distinct, parts, ", the day first (31/1/2024)" if order == DAY_FIRST else "")  # fmt: skip
    return {"name": name, "kind": "date", "order": order}


def classification_head(classes: list[str], counts: Counter, class_weighting: str) -> dict[str, Any]:
    """The classes (sorted as their values sort), their training counts and their weights."""
    total = sum(counts.values())
    weights = {name: 1.0 for name in classes}
    if class_weighting == "balanced":
        weights = {name: total / (len(classes) * counts[name]) if counts[name] else 0.0 for name in classes}
    return {"kind": "classification", "classes": classes, "train_counts": dict(counts), "class_weights": weights}


def regression_head(mean: float, std: float) -> dict[str, Any]:
    return {"kind": "regression", "mean": float(mean), "std": float(std) if std > 0 else 1.0}


def dates(values: list[str], sample: int = DATE_SAMPLE) -> bool:
    """Whether a string feature holds dates or times (`2024-01-31`, `1/31/2024`, `31.01.2024`, `Jan 5, 2024`,
    `2024-01-31 12:00:00`, `2:30 PM`: dates.FORMS): at least 95 % of its first `sample` distinct values written so."""
    values = values[:sample]
    return bool(values) and sum(written_as_date(value) for value in values) >= 0.95 * len(values)


def label_text(value: Any) -> str:
    """A label value as its class name: a float32 label by its shortest text (`0.1`, not `0.10000000149011612`)."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else np.format_float_positional(np.float32(value), trim="-")
    return str(value)
