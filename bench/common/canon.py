"""Canonical forms of query results, so that answers from different engines compare.

Timestamps become UTC ISO text with microseconds, floats are rounded to 6 decimals, lists
become tuples; strings that look like timestamps are parsed first (Tessera's JSON output
renders timestamps as text).
"""

import datetime as dt
import math
import re
import time
from decimal import Decimal

TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})?$")


def canon(value):
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, (float, Decimal)):
        value = float(value)
        return None if math.isnan(value) else round(value, 6) + 0.0
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
        return value.isoformat(timespec="microseconds")
    if isinstance(value, str) and TIMESTAMP.match(value):
        return canon(dt.datetime.fromisoformat(value.replace("Z", "+00:00")))
    if isinstance(value, (list, tuple)):
        return tuple(canon(v) for v in value)
    return value


def canon_rows(rows):
    """Rows (tuples or dicts) in canonical form."""
    out = []
    for row in rows:
        values = row.values() if isinstance(row, dict) else row
        out.append(tuple(canon(v) for v in values))
    return out


def same_rows(a, b) -> bool:
    """True when two result sets hold the same rows, in any order."""
    return sorted(a, key=repr) == sorted(b, key=repr)


def timed(run, tries: int):
    """Runs `run` `tries` times; its times and its last answer in canonical form."""
    times, rows = [], None
    for _ in range(tries):
        started = time.perf_counter()
        rows = run()
        times.append(time.perf_counter() - started)
    return times, canon_rows(rows)
