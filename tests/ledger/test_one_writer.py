"""The ledger is the only writer of every app table: each model of transcripts.models, and
django-tasks' result rows (a check on the source; migrations write too)."""

from __future__ import annotations

import re
from pathlib import Path

from django.apps import apps
from django.db.models import Model
from django_tasks_db.models import DBTaskResult

import transcripts

PACKAGE = Path(transcripts.__file__).resolve().parent
WRITERS = ("ledger", "migrations")
MODELS: list[type[Model]] = [*apps.get_app_config("transcripts").get_models(), DBTaskResult]
_NAMES = "|".join(sorted({model.__name__ for model in MODELS} | {"cls"}))
_TABLES = "|".join(sorted(model._meta.db_table for model in MODELS))
# ORM writes through a model's manager; raw SQL writing a model's table (by name, or as
# `{Model._meta.db_table}`); saving or deleting an instance or a queryset (a file's
# `.delete(save=False)` is storage, and `@router.delete(` an API route, not a row).
WRITES = re.compile(
    rf"\b(?:{_NAMES})\.objects\b.*\.(?:update|delete|bulk_create|bulk_update|create"
    r"|get_or_create|update_or_create)\("
    rf"|\b(?:INSERT INTO|UPDATE|COPY|DELETE FROM)\s+\"?(?:(?:{_TABLES})\b|{{\w+\._meta\.db_table}})"
    r"|(?<![@\w])\w+\.(?:save|delete)\((?!save=False)"
)


def _writes(path: Path) -> list[str]:
    return [
        f"{path.relative_to(PACKAGE)}:{number}: {line.strip()}"
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if WRITES.search(line)
    ]


def test_only_the_ledger_writes_app_tables() -> None:
    outside = [
        write
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.relative_to(PACKAGE).parts[0] not in WRITERS
        for write in _writes(path)
    ]
    assert outside == []


def test_the_check_finds_the_ledger_s_own_writes() -> None:
    ledger = {path.name for path in sorted((PACKAGE / "ledger").glob("*.py")) if _writes(path)}
    assert {
        "append.py",
        "lifecycle.py",
        "moderation.py",
        "runs.py",
        "threads.py",
        "tokens.py",
        "import_jobs.py",
        "worker_beats.py",
        "task_rows.py",
        "default_project.py",
    } <= ledger


def test_the_check_knows_every_model() -> None:
    assert {"Thread", "Run", "Event", "Message", "ApiToken", "ImportJob", "WorkerBeat"} <= set(
        _NAMES.split("|")
    )
    assert "DBTaskResult" in _NAMES
