"""A schedule's cron expression as the KFP backend reads it, checked here so a typo is one line, not a 400.

KFP's recurring runs (the ScheduledWorkflow controller) parse a cron with robfig/cron's parser in its
six-field form, seconds first (`0 0 3 * * *`: every day at 03:00:00), or a descriptor (`@daily`, `@every 6h`).
A user's five-field crontab line (`0 3 * * *`) is the same schedule with second 0, so it is sent as such.
"""

from __future__ import annotations

import re

# (name, lowest, highest, names a field may use) in the six-field order.
_FIELDS = (
    ("second", 0, 59, {}),
    ("minute", 0, 59, {}),
    ("hour", 0, 23, {}),
    ("day of month", 1, 31, {}),
    ("month", 1, 12, {m: i + 1 for i, m in enumerate("jan feb mar apr may jun jul aug sep oct nov dec".split())}),
    ("day of week", 0, 6, {d: i for i, d in enumerate("sun mon tue wed thu fri sat".split())}),
)
DESCRIPTORS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
_EVERY = re.compile(r"^@every (\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$")
_PART = re.compile(r"^(?P<range>\*|\?|[0-9a-z]+(-[0-9a-z]+)?)(/(?P<step>\d+))?$")


def kfp_cron(expression: str) -> str:
    """The expression in KFP's six-field form; ValueError with one line saying what is wrong."""
    text = " ".join(expression.strip().lower().split())
    if text.startswith("@"):
        if text in DESCRIPTORS or _EVERY.match(text):
            return text
        raise ValueError(f"{expression!r}: not a cron descriptor (use {', '.join(DESCRIPTORS)} or '@every 6h')")
    fields = text.split(" ")
    if len(fields) == 5:
        fields = ["0", *fields]  # A crontab line: at second 0.
    if len(fields) != 6:
        raise ValueError(
            f"{expression!r}: a cron has 5 fields (minute hour day-of-month month day-of-week, e.g. '0 3 * * *') "
            f"or 6 with seconds first, got {len(fields)}"
        )
    for value, (name, low, high, names) in zip(fields, _FIELDS, strict=True):
        problem = _field_problem(value, low, high, names)
        if problem:
            raise ValueError(f"{expression!r}: the {name} field {value!r} {problem}")
    return " ".join(fields)


def _field_problem(value: str, low: int, high: int, names: dict[str, int]) -> str | None:
    for part in value.split(","):
        match = _PART.match(part)
        if not match:
            return "is not a value, a range, a list or a step (e.g. 5, 1-5, 1,15, */10)"
        if match["step"] is not None and int(match["step"]) < 1:
            return "has a step of 0"
        if match["range"] in ("*", "?"):
            continue
        bounds = match["range"].split("-")
        numbers = []
        for bound in bounds:
            number = names.get(bound) if not bound.isdigit() else int(bound)
            if number is None:
                return f"holds {bound!r}, neither a number nor a name"
            if not low <= number <= high:
                return f"holds {number}, outside {low}-{high}"
            numbers.append(number)
        if len(numbers) == 2 and numbers[0] > numbers[1]:
            return f"is a range from {numbers[0]} down to {numbers[1]}"
    return None
