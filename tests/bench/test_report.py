"""bench/report.py: the recorded figures in one table, and the marked section of a doc."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture
def report() -> Any:
    """bench/report.py (the bench folder is not a package)."""
    sys.path.insert(0, str(BENCH))
    try:
        return importlib.import_module("report")
    finally:
        sys.path.remove(str(BENCH))


def _record(path: Path, *records: dict[str, Any]) -> Path:
    with path.open("a", encoding="utf-8") as out:
        for record in records:
            out.write(json.dumps(record) + "\n")
    return path


FIRST_PAGE = {
    "bench": "bench_first_page",
    "name": "first page on a fresh clone, uv, warm caches",
    "value": 12.34,
    "unit": "s",
    "goal": "<= 15 s",
    "ok": True,
    "baseline": ["pip, warm caches", 49.0],
    "ratio": 12.34 / 49.0,
}
LEDGER = {
    "bench": "bench_ledger",
    "name": "ledger append, batch 256",
    "value": 41200,
    "unit": "events/s",
    "goal": ">= 40% of COPY",
    "ok": False,
    "baseline": ["raw COPY (run_id, seq)", 120000],
    "ratio": 41200 / 120000,
}


def test_prints_one_row_per_figure(report: Any, tmp_path: Path, capsys: Any) -> None:
    record = _record(
        tmp_path / "latest.jsonl",
        FIRST_PAGE,
        LEDGER,
        {"bench": "bench_export", "failed": 2},
    )
    assert report.main([str(record)]) == 0
    out = capsys.readouterr().out
    rows = out.splitlines()
    assert rows[1].split() == ["bench", "figure", "value", "unit", "goal", "ratio", "ok"]
    first = next(line for line in rows if line.startswith("bench_first_page"))
    assert "12.3" in first and "<= 15 s" in first and "0.25x pip, warm caches" in first
    assert first.rstrip().endswith("ok")
    ledger = next(line for line in rows if line.startswith("bench_ledger"))
    assert "41,200" in ledger and "events/s" in ledger and ledger.rstrip().endswith("MISSED")
    failed = next(line for line in rows if line.startswith("bench_export"))
    assert "FAILED (2)" in failed
    assert "3 rows, 2 missed or failed" in out


def test_a_figure_recorded_twice_keeps_its_last_value(
    report: Any, tmp_path: Path, capsys: Any
) -> None:
    again = {**FIRST_PAGE, "value": 9.5, "ratio": None, "baseline": None}
    record = _record(tmp_path / "latest.jsonl", FIRST_PAGE, LEDGER, again)
    (tmp_path / "latest.jsonl").open("a").write("not json\n")
    records = report.read_records(record)
    assert [r["bench"] for r in records] == ["bench_first_page", "bench_ledger"]
    assert records[0]["value"] == 9.5
    assert "not a figure, skipped" in capsys.readouterr().err


def test_rewrites_only_the_marked_section(report: Any, tmp_path: Path) -> None:
    doc = tmp_path / "scaling.md"
    doc.write_text(
        "# Scaling\n\nIntro.\n\n## Latest figures\n\n"
        f"{report.START}\nold table\n{report.END}\n\n## Topology\n\nUnchanged.\n",
        encoding="utf-8",
    )
    record = _record(tmp_path / "latest.jsonl", FIRST_PAGE, LEDGER)
    assert report.main([str(record), "--write-docs", str(doc)]) == 0
    text = doc.read_text(encoding="utf-8")
    assert "old table" not in text
    assert text.startswith("# Scaling\n\nIntro.\n\n## Latest figures\n\n")
    assert text.endswith(f"{report.END}\n\n## Topology\n\nUnchanged.\n")
    section = text[text.index(report.START) : text.index(report.END)]
    assert "| bench | figure | value | unit | goal | ratio | ok |" in section
    assert (
        "| bench_first_page | first page on a fresh clone, uv, warm caches | 12.3 | s | <= 15 s"
        " | 0.25x pip, warm caches | ok |"
    ) in section
    assert "| bench_ledger | ledger append, batch 256 | 41,200 |" in section
    assert "commit " in section and "CPUs" in section and "RAM" in section
    # Written twice: still one section.
    assert report.main([str(record), "--write-docs", str(doc)]) == 0
    assert doc.read_text(encoding="utf-8").count(report.START) == 1


def test_adds_the_section_before_the_first_heading(report: Any, tmp_path: Path) -> None:
    doc = tmp_path / "scaling.md"
    doc.write_text("# Scaling\n\nIntro.\n\n## Topology\n\nUnchanged.\n", encoding="utf-8")
    report.write_docs(doc, "the table")
    text = doc.read_text(encoding="utf-8")
    assert text == (
        f"# Scaling\n\nIntro.\n\n## Latest figures\n\n{report.START}\nthe table\n"
        f"{report.END}\n\n## Topology\n\nUnchanged.\n"
    )


def test_no_record_is_an_error(report: Any, tmp_path: Path, capsys: Any) -> None:
    assert report.main([str(tmp_path / "missing.jsonl")]) == 1
    assert "no figures recorded" in capsys.readouterr().err
