"""The scale bench's seeder stores what the ledger would: each run's messages are the projection
of its events, and bulk_load leaves exactly the app's indexes."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import connection

from transcripts.ledger.default_project import default_project
from transcripts.models import Event, Message, Run, Thread
from transcripts.projector import project

pytestmark = pytest.mark.django_db(transaction=True)


def _bench_module(name: str) -> Any:
    """A module of the bench folder (not a package)."""
    bench = str(Path(__file__).resolve().parents[2] / "bench")
    sys.path.insert(0, bench)
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(bench)


@pytest.fixture
def seed() -> Any:
    """bench/scale_seed.py."""
    return _bench_module("scale_seed")


@pytest.fixture
def load() -> Any:
    """bench/scale_copy.py."""
    return _bench_module("scale_copy")


def _indexes(tables: tuple[str, ...]) -> set[tuple[str, str]]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = ANY(%s)", [list(tables)]
        )
        return set(cursor.fetchall())


def _seeder(seed: Any) -> Any:
    reporter = get_user_model().objects.create_user("bench")
    return seed.Seeder(project_id=default_project().pk, reporter_id=reporter.pk)


def test_bulk_load_drops_the_secondary_indexes_and_builds_the_same_again(
    seed: Any, load: Any
) -> None:
    before = _indexes(load.BIG_TABLES)
    seeder = _seeder(seed)
    with load.bulk_load() as rebuild:
        during = _indexes(load.BIG_TABLES)
        written = list(seed.normal_threads(seeder, first=0, count=12, chunk=5))
    assert written == [5, 10, 12]
    dropped = {name for name, _ in rebuild.indexes}
    assert "message_search_idx" in dropped
    assert {name for name, _ in during} == {name for name, _ in before} - dropped
    # Primary keys and the partial unique index keep checking while rows come in.
    assert {"transcripts_event_pkey", "message_one_active_per_depth"} <= {n for n, _ in during}
    assert _indexes(load.BIG_TABLES) == before
    assert Message.objects.filter(search="gradient").exists()


def test_each_runs_messages_are_the_projection_of_its_events(seed: Any) -> None:
    seeder = _seeder(seed)
    siblings = seed.special_thread(seeder, title="Three answers", turns=2, siblings=3)
    seed.special_thread(seeder, title="Edits", turns=4, alternatives=2)
    written = list(seed.normal_threads(seeder, first=0, count=25, chunk=4, writers=2))
    assert written[-1] == seeder.threads_written == Thread.objects.count() == 27
    assert Message.objects.count() == seeder.messages_written
    assert Event.objects.count() == seeder.events_written
    runs = Run.objects.all()
    assert {run.status for run in runs} == {"committed", "superseded", "failed"}
    for run in runs:
        events = Event.objects.filter(run_id=run.id).order_by("seq")
        projection = project(
            events.values("seq", "kind", "data", "at"), run_id=run.id, parent_id=run.fork_from_id
        )
        messages = Message.objects.filter(run_id=run.id).order_by("position")
        assert [
            (m.id, m.parent_id, m.role, m.parts, m.first_seq, m.last_seq) for m in messages
        ] == [
            (p["id"], p["parentMessageId"], p["role"], p["parts"], *seqs)
            for p, seqs in zip(projection.messages, projection.seq_ranges, strict=True)
        ]
        assert run.last_seq == projection.last_seq
    thread = Thread.objects.get(pk=siblings)
    head = Message.objects.get(pk=thread.head_id)
    assert head.active and head.run.status == "committed"
    answers = Message.objects.filter(thread_id=siblings, depth=1)
    assert [(m.role, m.active) for m in answers.order_by("id")] == [
        ("assistant", False),
        ("assistant", False),
        ("assistant", True),
    ]
