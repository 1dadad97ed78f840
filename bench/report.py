"""Every figure the benchmarks recorded, in one table (`make bench` runs this last).

    python bench/report.py [RECORD] [--write-docs [DOC]]

RECORD is the JSON Lines file `_record.figure` appends to (default: $BENCH_RECORD, else
bench/results/latest.jsonl). The table has one row per figure: bench, figure, value, unit,
goal, ratio to its baseline, ok/MISSED; a bench that failed (a line `{"bench": ..., "failed":
exit status}`, written by `make bench`) gets a row saying so. It is headed by the date, the
machine (CPUs, RAM, load) and the commit (`+dirty` when the work tree differs from it).

--write-docs rewrites the table between `<!-- bench:latest:start -->` and
`<!-- bench:latest:end -->` in DOC (default docs/scaling.md) as Markdown; a DOC without the
markers gets a "## Latest figures" section before its first `## ` heading.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _record import RECORD_ENV, format_value

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_RECORD = ROOT / "bench" / "results" / "latest.jsonl"
DEFAULT_DOC = ROOT / "docs" / "scaling.md"
START = "<!-- bench:latest:start -->"
END = "<!-- bench:latest:end -->"
HEADING = "## Latest figures"
COLUMNS = ["bench", "figure", "value", "unit", "goal", "ratio", "ok"]


def read_records(path: Path) -> list[dict[str, Any]]:
    """The records of a JSON Lines file, the last of each (bench, figure) kept in the place
    of its first; a line that is not a JSON object is reported and skipped."""
    kept: dict[tuple[str, str], dict[str, Any]] = {}
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError:
                record = None
            if not isinstance(record, dict) or "bench" not in record:
                print(f"{path}:{number}: not a figure, skipped", file=sys.stderr)
                continue
            key = (str(record["bench"]), str(record.get("name", "")))
            kept[key] = record
    return list(kept.values())


def row(record: dict[str, Any]) -> list[str]:
    """One figure as the table's cells."""
    if "failed" in record:
        return [
            record["bench"],
            "(the bench failed)",
            "",
            "",
            "",
            "",
            f"FAILED ({record['failed']})",
        ]
    ratio = ""
    if record.get("ratio") is not None and record.get("baseline"):
        ratio = f"{record['ratio']:.2f}x {record['baseline'][0]}"
    ok = {True: "ok", False: "MISSED", None: ""}[record.get("ok")]
    value = record.get("value")
    shown = format_value(value) if isinstance(value, int | float) else str(value)
    return [
        str(record["bench"]),
        str(record.get("name", "")),
        shown,
        str(record.get("unit", "")),
        str(record.get("goal") or ""),
        ratio,
        ok,
    ]


def text_table(rows: Sequence[Sequence[str]]) -> str:
    """Aligned columns for a terminal (value right-aligned)."""
    table = [COLUMNS, *rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(COLUMNS))]
    out = []
    for line in table:
        cells = [
            cell.rjust(width) if i == 2 else cell.ljust(width)
            for i, (cell, width) in enumerate(zip(line, widths, strict=True))
        ]
        out.append("  ".join(cells).rstrip())
    return "\n".join(out)


def markdown_table(rows: Sequence[Sequence[str]]) -> str:
    def cell(text: str) -> str:
        return text.replace("|", "\\|")

    align = ["--:" if name == "value" else "---" for name in COLUMNS]
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(cell(c) for c in line) + " |" for line in rows]
    return "\n".join(lines)


def machine() -> str:
    """CPUs (count, model), RAM and load average of this machine."""
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        model = platform.processor()
    ram = ""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                ram = f", {int(line.split()[1]) / 1024 / 1024:.1f} GiB RAM"
                break
    except OSError:
        pass
    try:
        load = ", load " + " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        load = ""
    cpus = f"{os.cpu_count()} CPUs" + (f" ({model})" if model else "")
    return cpus + ram + load


def commit(root: Path = ROOT) -> str:
    """The short commit, `+dirty` when the work tree differs from it ("unknown" outside git)."""

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, check=True
        ).stdout.strip()

    try:
        head = git("rev-parse", "--short", "HEAD")
        dirty = bool(git("status", "--porcelain"))
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def header(*, when: str | None = None, on: str | None = None, at: str | None = None) -> str:
    when = when or time.strftime("%Y-%m-%d %H:%M %Z")
    return f"{when} on {on or machine()}, commit {at or commit()}"


def section(records: Iterable[dict[str, Any]], head: str) -> str:
    """The Markdown between the markers: the header line and the table."""
    rows = [row(r) for r in records]
    body = markdown_table(rows) if rows else "_No figures recorded._"
    return f"Measured {head} (`make bench`, then `python bench/report.py --write-docs`).\n\n{body}"


def write_docs(doc: Path, content: str) -> None:
    """Put content between the markers of doc, adding the section when the markers are not
    there yet (before the first `## ` heading, else at the end)."""
    text = doc.read_text(encoding="utf-8")
    block = f"{START}\n{content}\n{END}"
    start, end = text.find(START), text.find(END)
    if start != -1 and end > start:
        text = text[:start] + block + text[end + len(END) :]
    else:
        new = f"{HEADING}\n\n{block}\n\n"
        at = text.find("\n## ")
        text = text[: at + 1] + new + text[at + 1 :] if at != -1 else text.rstrip() + "\n\n" + new
    doc.write_text(text, encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("record", nargs="?", help=f"default: ${RECORD_ENV} or {DEFAULT_RECORD}")
    parser.add_argument(
        "--write-docs",
        nargs="?",
        const=str(DEFAULT_DOC),
        metavar="DOC",
        help=f"rewrite the marked table in DOC (default {DEFAULT_DOC.relative_to(ROOT)})",
    )
    args = parser.parse_args(argv)
    path = Path(args.record or os.environ.get(RECORD_ENV) or DEFAULT_RECORD)
    if not path.exists():
        print(f"{path}: no figures recorded (run `make bench`)", file=sys.stderr)
        return 1
    records = read_records(path)
    head = header()
    print(f"Figures of {head}:")
    print(text_table([row(r) for r in records]))
    missed = sum(1 for r in records if r.get("ok") is False or "failed" in r)
    print(f"{len(records)} rows, {missed} missed or failed")
    if args.write_docs:
        write_docs(Path(args.write_docs), section(records, head))
        print(f"wrote the table into {args.write_docs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
