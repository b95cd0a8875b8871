"""A column only some spans hold, with one value wherever present: it tells a record's span and nothing else.

plm's Wages, a year a file; the next year's export adds `year`, 1977 in every row. The union held it as a constant
where present and missing elsewhere, and the model learnt "is span 2" from it (its missing flag). It is left out,
said like the other columns left out; a column of one value missing here and there within every span is kept.
"""

from __future__ import annotations

from kflow.components.datasets.tabular.plan import StringSummary, string_spec
from kflow.components.datasets.tabular.task import TabularTask
from kflow.components.util.schema import annotation_tags
from tests.components.span_union.test_yes_no_spans import joined, years


def test_a_constant_only_one_span_holds_is_left_out_with_the_reason(tmp_path):
    first, second = years()
    ticked = lambda frame: [1 if i % 4 == 0 else None for i in range(len(frame))]  # noqa: E731
    first, second = first.assign(ticked=ticked(first)), second.assign(ticked=ticked(second), year=1977)
    examples, schema = joined(tmp_path, [first, second])
    assert annotation_tags(schema, "year")["kflow_spans"] == "2"
    assert "kflow_spans" not in annotation_tags(schema, "ticked")  # every span holds it
    task = TabularTask(schema)
    task.prepare(examples, tmp_path / "assets")
    left_out = task.preprocessing["left_out"]
    assert set(left_out) == {"year"}, left_out
    assert left_out["year"].startswith("a constant where present (1977 in ")
    assert left_out["year"].endswith(" training rows: span 2 alone holds the column)")
    # One value, missing in some rows of every span (a box ticked or left empty): kept, its missing values flagged.
    spec = next(spec for spec in task.preprocessing["features"] if spec["name"] == "ticked")
    assert spec["kind"] == "numeric" and spec["missing"]


def test_a_text_constant_only_some_spans_hold_is_left_out():
    summary = StringSummary(seen=474, distinct=1, chars=474 * 4, ranked=[("2024", 474)])
    spec = string_spec("release", summary, {"max_categories": 100, "text_min_chars": 20}, rows=948, spans="2,3")
    assert (
        spec["left_out"]
        == "a constant where present ('2024' in 474 of 948 training rows: spans 2, 3 alone hold the column)"
    )
    assert (
        string_spec("release", summary, {"max_categories": 100, "text_min_chars": 20}, rows=948)["kind"]
        == "categorical"
    )
