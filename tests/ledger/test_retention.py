"""Retention: a project deletes threads with no activity for N days, audited, with a fixed clock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import call_command

from tests.base import Team
from tests.factories import ask, conversation, make_run, make_thread, say
from transcripts.ledger import moderation
from transcripts.ledger.deletion import delete_threads
from transcripts.ledger.projects import set_retention
from transcripts.ledger.ratings import rate_run
from transcripts.ledger.retention import purge_expired
from transcripts.models import (
    AuditRecord,
    Event,
    Message,
    Project,
    Report,
    Run,
    RunRating,
    Thread,
)
from transcripts.worker.sweeps import sweep

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)

pytestmark = pytest.mark.django_db


def _aged(thread: Thread, days: float) -> Thread:
    """thread, last active days before NOW (tests move the clock, not the thread)."""
    Thread.objects.filter(pk=thread.pk).update(updated_at=NOW - timedelta(days=days))
    return thread


def _busy_thread(team: Team, project: Project, title: str) -> Thread:
    """A thread with two branches, a report and a rating."""
    thread = conversation(turns=2, title=title)
    Thread.objects.filter(pk=thread.pk).update(project=project)
    thread.refresh_from_db()
    question = Message.objects.filter(thread=thread, role="user").order_by("depth").last()
    assert question is not None
    other = say(thread, "another answer", fork_from=question.id)
    rate_run(user=team.superuser, run=other, preferred=True, note="better")
    answer = Message.objects.filter(run=other).get()
    moderation.report_message(user=team.superuser, message=answer, reason="spam")
    return thread


def test_threads_idle_longer_than_the_period_go_with_everything_in_them(team: Team) -> None:
    set_retention(project=team.alpha, days=30)
    old = _aged(_busy_thread(team, team.alpha, "old"), 31)
    recent = _aged(_busy_thread(team, team.alpha, "recent"), 29)
    elsewhere = _aged(_busy_thread(team, team.beta, "beta keeps forever"), 400)
    counts = {
        "runs": Run.objects.filter(thread=old).count(),
        "events": Event.objects.filter(thread=old).count(),
        "messages": Message.objects.filter(thread=old).count(),
    }

    [purge] = purge_expired(now=NOW)

    assert purge.project == team.alpha and not purge.dry_run
    assert purge.deleted.as_dict() == {"threads": 1, **counts, "reports": 1, "ratings": 1}
    assert not Thread.objects.filter(pk=old.pk).exists()
    for model in (Run, Event, Message, Report, RunRating):
        assert not model.objects.filter(thread_id=old.pk).exists(), model
    assert Thread.objects.filter(pk__in=[recent.pk, elsewhere.pk]).count() == 2
    record = AuditRecord.objects.get(action="purge")
    assert record.project == team.alpha and record.actor_name == "system"
    assert record.details["threads"] == 1 and record.details["events"] == counts["events"]
    assert record.details["cutoff"] == (NOW - timedelta(days=30)).isoformat()


def test_a_dry_run_counts_and_deletes_nothing(team: Team) -> None:
    set_retention(project=team.alpha, days=7)
    old = _aged(_busy_thread(team, team.alpha, "old"), 8)

    [purge] = purge_expired(now=NOW, dry_run=True)

    assert purge.dry_run and purge.deleted.threads == 1 and purge.deleted.reports == 1
    assert Thread.objects.filter(pk=old.pk).exists()
    assert not AuditRecord.objects.filter(action="purge").exists()


def test_retention_is_off_by_default(team: Team) -> None:
    _aged(make_thread("ancient", project=team.alpha), 10_000)
    assert purge_expired(now=NOW) == []
    assert Thread.objects.filter(project=team.alpha).count() == 1


def test_activity_keeps_a_thread(team: Team) -> None:
    set_retention(project=team.alpha, days=30)
    thread = _aged(make_thread("revived", project=team.alpha), 60)
    ask(thread, "still there?")  # a new run is activity: updated_at moves to now
    assert purge_expired(now=NOW + timedelta(days=1))[0].deleted.threads == 0


def test_a_purged_parent_thread_leaves_its_forks_in_place(team: Team) -> None:
    parent = make_thread("parent", project=team.alpha)
    child = make_thread("child", project=team.alpha, parent_thread=parent)
    deleted = delete_threads([parent.id])
    assert deleted.threads == 1
    child.refresh_from_db()
    assert child.parent_thread_id is None


def test_the_command_and_the_worker_sweep_purge_too(team: Team, capsys) -> None:
    set_retention(project=team.alpha, days=1)
    thread = make_thread("old", project=team.alpha)
    make_run(thread, ("text-delta", {"delta": "hello"}))
    Thread.objects.filter(pk=thread.pk).update(updated_at=datetime.now(UTC) - timedelta(days=2))

    call_command("purge_expired", "--dry-run")
    out = capsys.readouterr().out
    assert "alpha: would delete 1 threads, 1 runs, 1 events, 1 messages" in out
    assert Thread.objects.filter(pk=thread.pk).exists()

    assert sweep(purge=False).purges == []
    assert Thread.objects.filter(pk=thread.pk).exists()
    [purged] = sweep(purge=True).purges
    assert purged.deleted.threads == 1
    assert not Thread.objects.filter(pk=thread.pk).exists()
