"""One way for every benchmark to report a figure: a printed line with its goal and the ratio
to the baseline measured in the same run, and (when BENCH_RECORD names a file) a JSON line
appended to that file, which `bench/report.py` reads back into one table (`make bench`).

    from _record import figure
    figure("HTTP ingest, batch 256, 4 clients", 41_200, "events/s", goal=">= 75% of ledger",
           baseline=("ledger in-process", 52_000), ok=41_200 >= 0.75 * 52_000)

A figure is `ok` when the caller says so (it knows what its goal means); `ratio` is value over
the baseline's value when a baseline is given.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

RECORD_ENV = "BENCH_RECORD"


def figure(
    name: str,
    value: float,
    unit: str,
    *,
    goal: str = "",
    ok: bool | None = None,
    baseline: tuple[str, float] | None = None,
    bench: str = "",
    note: str = "",
) -> dict[str, Any]:
    """Print one figure (value, unit, goal, ratio to the baseline, ok/MISSED) and record it;
    returns the record."""
    ratio = None
    if baseline is not None and baseline[1]:
        ratio = value / baseline[1]
    record = {
        "bench": bench or _caller_bench(),
        "name": name,
        "value": value,
        "unit": unit,
        "goal": goal,
        "ok": ok,
        "baseline": list(baseline) if baseline else None,
        "ratio": ratio,
        "note": note,
        "at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    print(format_line(record), flush=True)
    path = os.environ.get(RECORD_ENV)
    if path:
        with Path(path).open("a", encoding="utf-8") as out:
            out.write(json.dumps(record) + "\n")
    return record


def format_value(value: float) -> str:
    """A figure's value as people read it: thousands separated, one decimal under 100."""
    if abs(value) >= 100 or float(value).is_integer():
        return f"{value:,.0f}"
    return f"{value:,.1f}"


def format_line(record: dict[str, Any]) -> str:
    """The printed line of a record: FIGURE name: value unit | goal | ratio | ok."""
    parts = [f"FIGURE {record['name']}: {format_value(record['value'])} {record['unit']}"]
    if record.get("goal"):
        parts.append(f"goal {record['goal']}")
    if record.get("ratio") is not None:
        base_name = record["baseline"][0]
        parts.append(f"{record['ratio']:.2f}x {base_name}")
    if record.get("ok") is not None:
        parts.append("ok" if record["ok"] else "MISSED")
    return " | ".join(parts)


def _caller_bench() -> str:
    """The running script's name (bench_api, bench_scale...)."""
    import sys

    return Path(sys.argv[0]).stem if sys.argv and sys.argv[0] else ""
