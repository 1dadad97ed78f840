"""The ledger is the only writer of threads, runs, events and messages (a check on the source)."""

from __future__ import annotations

import re
from pathlib import Path

import transcripts

PACKAGE = Path(transcripts.__file__).resolve().parent
# ORM writes through a manager of the four models, raw SQL writing their tables, and saving
# or deleting an instance held under one of their names.
WRITES = re.compile(
    r"\b(Thread|Run|Event|Message)\.objects\b.*\.(update|delete|bulk_create|bulk_update|create"
    r"|get_or_create|update_or_create)\("
    r"|\b(INSERT INTO|UPDATE|COPY|DELETE FROM) transcripts_(thread|run|event|message)\b"
    r"|\b(thread|run|message|event)\.(save|delete)\("
)


def test_only_the_ledger_writes_threads_runs_events_and_messages() -> None:
    outside = [
        f"{path.relative_to(PACKAGE)}:{number}: {line.strip()}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.relative_to(PACKAGE).parts[0] not in ("ledger", "migrations")
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if WRITES.search(line)
    ]
    assert outside == []


def test_the_check_finds_the_ledger_s_own_writes() -> None:
    ledger = [
        path.name
        for path in sorted((PACKAGE / "ledger").glob("*.py"))
        if any(WRITES.search(line) for line in path.read_text().splitlines())
    ]
    assert {"append.py", "lifecycle.py", "moderation.py", "runs.py", "threads.py"} <= set(ledger)
