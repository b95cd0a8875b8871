import time


def _stamp(artifact, started):
    (artifact.path / "interval.txt").write_text(f"{started} {time.time()}")


def produce(*, numbers, value, sleep, label):
    started = time.time()
    time.sleep(sleep)
    (numbers.path / "value.txt").write_text(str(value))
    _stamp(numbers, started)
    return {"value": value}


def add(*, left, right, total, add):
    result = sum(int((a.path / "value.txt").read_text()) for a in (left, right)) + add
    (total.path / "value.txt").write_text(str(result))
    return {"total": result}


def double(*, numbers, doubled, fail, sleep):
    (doubled.path / "partial.txt").write_text("written before the work finished")
    time.sleep(sleep)
    if fail:
        raise RuntimeError("asked to fail")
    value = int((numbers.path / "value.txt").read_text())
    (doubled.path / "value.txt").write_text(str(2 * value))
    return {"value": 2 * value}


def count_attempts(*, numbers, value, working_dir):
    """Counts its executions in the working dir, which outlives each execution."""
    attempts = working_dir / "attempts.txt"
    count = int(attempts.read_text()) + 1 if attempts.exists() else 1
    attempts.write_text(str(count))
    (numbers.path / "value.txt").write_text(str(count))
    if count < value:
        raise RuntimeError(f"attempt {count} of {value}")


def judge(*, numbers, blessing, at_least):
    value = int((numbers.path / "value.txt").read_text())
    check = {
        "metric": "value",
        "value": value,
        "bound": "lower_bound",
        "threshold": at_least,
        "passed": value >= at_least,
    }
    blessing.set_blessed(value >= at_least, [check])
    return {"blessed": value >= at_least}


WARM_EVENTS: list[tuple[str, float]] = []  # ("entered" | "left", when), appended by warm_up's context
FAIL_WARM_UP = False


class _Noted:
    def __init__(self, parameters):
        self.parameters = parameters

    def __enter__(self):
        WARM_EVENTS.append(("entered", time.time()))

    def __exit__(self, *_):
        WARM_EVENTS.append(("left", time.time()))


def warm_up(parameters):
    if FAIL_WARM_UP:
        raise RuntimeError("a warm-up that fails")
    return _Noted(parameters)
