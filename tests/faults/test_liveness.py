"""Worker liveness on the test database: which task rows a live worker gives back, and what
the page of a run says when no worker is about."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

import pytest
from django.db.models.functions import Now
from django.urls import reverse
from django_tasks_db.compat import TaskResultStatus
from django_tasks_db.models import DBTaskResult

from tests.base import Team
from tests.factories import ask, make_thread, say
from transcripts import ledger
from transcripts.errors import WorkerLost
from transcripts.generation import tasks
from transcripts.generation.runner import generate
from transcripts.generation.start import start_generation
from transcripts.ledger.task_rows import MAX_ATTEMPTS
from transcripts.ledger.worker_beats import record_beat
from transcripts.models import Run, RunStatus, Thread, WorkerBeat
from transcripts.worker.liveness import (
    Liveness,
    release_own_tasks,
    release_tasks_of_dead_workers,
)
from transcripts.worker.sweeps import sweep

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def lease(settings: Any) -> float:
    settings.TRANSCRIPTS_LEASE_SECONDS = 30
    return 30.0


def _beat(worker_id: str, *, seconds_ago: float) -> None:
    record_beat(worker_id=worker_id, name=f"host:{worker_id}")
    WorkerBeat.objects.filter(pk=worker_id).update(seen_at=Now() - timedelta(seconds=seconds_ago))


def _running_task(*claimed_by: str) -> DBTaskResult:
    """A generation task row, claimed in turn by each of claimed_by (the last one runs it)."""
    result = tasks.generate_run.enqueue("01ARZ3NDEKTSV4RRFFQ69G5FAV")
    row = DBTaskResult.objects.get(pk=result.id)
    for worker_id in claimed_by:
        row.claim(worker_id)
    return row


def _status(row: DBTaskResult) -> str:
    row.refresh_from_db()
    return str(row.status)


def test_the_running_task_of_a_worker_unseen_for_longer_than_the_lease_is_queued_again() -> None:
    _beat("dead", seconds_ago=31)
    row = _running_task("dead")

    assert release_tasks_of_dead_workers() == [str(row.id)]
    assert _status(row) == TaskResultStatus.READY
    assert release_tasks_of_dead_workers() == []


def test_tasks_of_live_workers_and_of_workers_that_never_beat_are_left_alone() -> None:
    _beat("live", seconds_ago=29)
    _beat("dead", seconds_ago=31)
    live, unknown = _running_task("live"), _running_task("a-bare-db_worker")
    # A task the dead worker once ran, now claimed by a live one, is the live one's.
    moved = _running_task("dead", "live")

    assert release_tasks_of_dead_workers() == []
    assert [_status(r) for r in (live, unknown, moved)] == [TaskResultStatus.RUNNING] * 3


def test_a_task_whose_workers_died_running_it_three_times_is_failed_not_queued_again() -> None:
    _beat("dead", seconds_ago=60)
    row = _running_task(*[f"w{n}" for n in range(MAX_ATTEMPTS - 1)], "dead")

    assert release_tasks_of_dead_workers() == [str(row.id)]
    assert _status(row) == TaskResultStatus.FAILED
    (error,) = row.task_result.errors
    assert error.exception_class is WorkerLost
    assert "3 times" in error.traceback


def test_a_worker_gives_back_its_own_task_left_running_when_the_database_failed() -> None:
    _beat("me", seconds_ago=0)
    mine, theirs = _running_task("me"), _running_task("other")

    assert release_own_tasks("me") == [str(mine.id)]
    assert (_status(mine), _status(theirs)) == (TaskResultStatus.READY, TaskResultStatus.RUNNING)


def test_the_sweep_gives_back_dead_workers_tasks_only_when_told_it_may() -> None:
    _beat("dead", seconds_ago=31)
    row = _running_task("dead")

    assert sweep().released == []
    assert _status(row) == TaskResultStatus.RUNNING
    assert sweep(release=True).released == [str(row.id)]


def test_a_worker_judges_others_only_after_beating_for_a_whole_lease(settings: Any) -> None:
    settings.TRANSCRIPTS_LEASE_SECONDS = 0.2
    liveness = Liveness("judge")
    assert not liveness.may_judge_others()
    liveness.beat()
    assert not liveness.may_judge_others()
    beat = WorkerBeat.objects.get(pk="judge")
    assert beat.name == liveness.name and beat.seen_at >= beat.started_at
    time.sleep(0.25)
    assert liveness.may_judge_others()


def test_a_run_an_earlier_attempt_started_is_left_to_its_lease_not_started_over() -> None:
    thread = make_thread()
    ask(thread, "Tell me a story")
    run = start_generation(thread=thread, parameters={"delayMs": 0})
    ledger.claim_run(run=run.id, worker="killed-worker", lease_seconds=30)
    ledger.append_events(
        run=run.id, events=[{"seq": 1, "kind": "text-delta", "data": {"delta": "Once"}}]
    )

    assert generate(run.id, worker="another-worker") == "skipped"
    run.refresh_from_db()
    assert (run.status, run.last_seq, run.lease_owner) == (
        RunStatus.STREAMING,
        1,
        "killed-worker",
    )


# --- what the page of a queued run says ------------------------------------------------------


def _queued_run(team: Team, generator: str = "demo") -> tuple[Thread, Run]:
    thread = make_thread(project=team.alpha)
    ask(thread, "Tell me a story")
    say(thread, "Once upon a time.")
    return thread, start_generation(thread=thread, generator=generator)


def _live_text(team: Team, run: Run) -> str:
    response = team.client(team.viewer).get(reverse("run_live", args=[run.id]))
    assert response.status_code == 200
    return response.content.decode()


START_ONE = "start one with “python manage.py worker”."


def test_a_queued_run_says_no_worker_is_running_when_none_ever_ran(team: Team) -> None:
    _, run = _queued_run(team)
    assert f"No worker is running: {START_ONE}" in _live_text(team, run)


def test_a_queued_run_says_how_long_no_worker_has_been_seen(team: Team) -> None:
    _, run = _queued_run(team)
    _beat("gone", seconds_ago=45)
    assert f"No worker has been seen for 45 s: {START_ONE}" in _live_text(team, run)
    _beat("gone", seconds_ago=2 * 3600 + 60)
    assert f"No worker has been seen for 2\xa0hours, 1\xa0minute: {START_ONE}" in _live_text(
        team, run
    )


def test_a_queued_run_waits_quietly_while_a_worker_is_about(team: Team) -> None:
    _, run = _queued_run(team)
    _beat("gone", seconds_ago=3600)
    _beat("busy", seconds_ago=10)  # beating while it generates another run
    text = _live_text(team, run)
    assert "Waiting for a worker…" in text
    assert "No worker" not in text


def test_a_run_queued_for_an_external_stream_layer_does_not_ask_for_a_worker(
    team: Team, settings: Any
) -> None:
    settings.TRANSCRIPTS_EXTERNAL_GENERATOR = True
    _, run = _queued_run(team, generator="external")
    text = _live_text(team, run)
    assert "Waiting for the external stream layer to claim this run…" in text
    assert "No worker" not in text


def test_reading_the_page_of_a_queued_run_writes_nothing_and_hides_it_from_outsiders(
    team: Team,
) -> None:
    _, run = _queued_run(team)
    _beat("gone", seconds_ago=45)
    before = list(WorkerBeat.objects.values()), Run.objects.values().get(pk=run.pk)
    _live_text(team, run)
    assert (list(WorkerBeat.objects.values()), Run.objects.values().get(pk=run.pk)) == before
    outsider = team.client(team.outsider).get(reverse("run_live", args=[run.id]))
    assert outsider.status_code == 404
