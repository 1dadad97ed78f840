"""The ledger against PostgreSQL: run lifecycle, appends, commits, branching, NOTIFY."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest
from django.db import connection, transaction
from django.utils import timezone

from tests.factories import (
    ask,
    conversation,
    events,
    last_message,
    make_run,
    make_thread,
    say,
    user_message,
)
from tests.ledger.invariants import check_all
from transcripts import ledger, selectors
from transcripts.errors import (
    Conflict,
    InvalidInput,
    NotFound,
    RunClosed,
    SeqConflict,
    SeqGap,
    ThreadLocked,
)
from transcripts.ids import new_ulid
from transcripts.ledger.default_project import default_project
from transcripts.models import Event, Message, Run, RunStatus, Thread

pytestmark = pytest.mark.django_db


def deltas(*words: str, start: int = 1) -> list[dict[str, Any]]:
    return events(*[("text-delta", {"delta": w}) for w in words], start=start)


def active_texts(thread: Thread) -> list[str]:
    path = Message.objects.filter(thread=thread, active=True).order_by("depth")
    return ["".join(p.get("text", "") for p in m.parts) for m in path]


def status_of(run: Run) -> str:
    run.refresh_from_db()
    return run.status


def stored_events(run: Run) -> list[tuple[int, str, Any]]:
    return list(Event.objects.filter(run=run).order_by("seq").values_list("seq", "kind", "data"))


# --- threads ---------------------------------------------------------------------------------


def test_create_thread_with_a_client_id_is_idempotent() -> None:
    wanted = new_ulid()
    first, created = ledger.create_thread(project=default_project(), title="One", thread_id=wanted)
    again, created_again = ledger.create_thread(
        project=default_project(), title="Other title", thread_id=wanted
    )
    assert (created, created_again) == (True, False)
    assert again.pk == first.pk == wanted
    assert Thread.objects.get().title == "One"


def test_create_thread_refuses_unstorable_metadata() -> None:
    with pytest.raises(InvalidInput) as caught:
        ledger.create_thread(project=default_project(), title="x", metadata={"note": "a\x00b"})
    assert caught.value.details["problems"][0]["path"] == "metadata.note"
    assert not Thread.objects.exists()


# --- begin_run -------------------------------------------------------------------------------


def test_a_run_begins_at_the_head_by_default() -> None:
    thread = conversation(turns=1)
    run, created = ledger.begin_run(thread=thread)
    assert created
    assert run.fork_from_id == thread.head_id is not None
    assert run.status == RunStatus.STREAMING
    assert run.started_at is not None


def test_the_first_run_of_an_empty_thread_starts_a_root() -> None:
    run, _ = ledger.begin_run(thread=make_thread())
    assert run.fork_from_id is None


def test_fork_from_none_begins_a_new_root() -> None:
    thread = conversation(turns=1)
    run, _ = ledger.begin_run(thread=thread, fork_from=None)
    assert run.fork_from_id is None


def test_a_run_may_begin_queued() -> None:
    run, _ = ledger.begin_run(thread=make_thread(), status=RunStatus.QUEUED)
    assert run.status == RunStatus.QUEUED
    assert run.started_at is None
    with pytest.raises(InvalidInput):
        ledger.begin_run(thread=make_thread(), status=RunStatus.COMMITTED)


def test_the_fork_point_must_be_a_message_of_the_same_thread() -> None:
    ours, theirs = conversation(turns=1), conversation(turns=1)
    assert theirs.head_id is not None
    for fork_from in (theirs.head_id, new_ulid()):
        with pytest.raises(InvalidInput) as caught:
            ledger.begin_run(thread=ours, fork_from=fork_from)
        assert caught.value.details["field"] == "forkFromMessageId"
    with pytest.raises(InvalidInput):
        ledger.begin_run(thread=ours, fork_from="not-a-ulid")
    assert not Run.objects.filter(thread=ours, status=RunStatus.STREAMING).exists()


def test_a_fork_point_may_be_given_as_a_message() -> None:
    thread = conversation(turns=1)
    first = Message.objects.get(thread=thread, depth=0)
    run, _ = ledger.begin_run(thread=thread, fork_from=first)
    assert run.fork_from_id == first.id


def test_ids_are_case_insensitive_and_given_back_upper_case() -> None:
    thread = make_thread()
    prompt = last_message(ask(thread, "q"))
    wanted = new_ulid()
    run, created = ledger.begin_run(
        thread=thread, fork_from=prompt.id.lower(), run_id=wanted.lower()
    )
    assert (run.id, run.fork_from_id, created) == (wanted, prompt.id, True)
    again, created = ledger.begin_run(
        thread=thread, fork_from=prompt.id.lower(), run_id=wanted.lower()
    )
    assert (again.pk, created) == (wanted, False)
    assert (
        ledger.create_thread(project=default_project(), thread_id=thread.id.lower())[0].pk
        == thread.id
    )


def test_thread_and_run_metadata_must_be_json_objects() -> None:
    with pytest.raises(InvalidInput):
        ledger.create_thread(project=default_project(), metadata=[["a", 1]])  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        ledger.create_thread(project=default_project(), agents="planner")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        ledger.begin_run(thread=make_thread(), parameters=[1])  # type: ignore[arg-type]
    assert Thread.objects.count() == 1


def test_a_client_run_id_makes_begin_idempotent() -> None:
    thread = conversation(turns=1)
    wanted = new_ulid()
    run, created = ledger.begin_run(thread=thread, run_id=wanted, model="m1")
    again, created_again = ledger.begin_run(thread=thread, run_id=wanted, model="m2")
    assert (created, created_again) == (True, False)
    assert again.pk == run.pk == wanted
    assert Run.objects.get(pk=wanted).model == "m1"


def test_a_retried_begin_at_the_head_finds_its_run_after_the_head_moved() -> None:
    thread = conversation(turns=1)
    wanted = new_ulid()
    run, _ = ledger.begin_run(thread=thread, run_id=wanted)
    ledger.append_events(run=run, events=deltas("hi"))
    ledger.commit_run(run=run)
    again, created = ledger.begin_run(thread=thread, run_id=wanted)
    assert not created
    assert again.pk == wanted


def test_the_same_run_id_at_another_fork_point_is_a_conflict() -> None:
    thread = conversation(turns=1)
    wanted = new_ulid()
    ledger.begin_run(thread=thread, run_id=wanted)
    with pytest.raises(Conflict) as caught:
        ledger.begin_run(thread=thread, run_id=wanted, fork_from=None)
    assert caught.value.details["forkFromMessageId"] == thread.head_id
    with pytest.raises(Conflict) as elsewhere:
        ledger.begin_run(thread=make_thread(), run_id=wanted)
    # The other thread may be hidden from the caller: its id is not given away.
    assert elsewhere.value.details == {"runId": wanted}


def test_a_locked_thread_refuses_new_runs() -> None:
    thread = make_thread()
    Thread.objects.filter(pk=thread.pk).update(locked=True)
    with pytest.raises(ThreadLocked):
        ledger.begin_run(thread=thread)
    assert not Run.objects.exists()


# --- append_events ---------------------------------------------------------------------------


def test_appends_continue_the_last_seq() -> None:
    run, _ = ledger.begin_run(thread=make_thread())
    first = ledger.append_events(run=run, events=deltas("a", "b"))
    second = ledger.append_events(run=run.id, events=deltas("c", start=3))
    assert (first.last_seq, first.accepted, first.duplicates) == (2, 2, 0)
    assert (second.last_seq, second.accepted) == (3, 1)
    assert [seq for seq, _, _ in stored_events(run)] == [1, 2, 3]
    run.refresh_from_db()
    assert run.last_seq == 3


def test_small_and_large_batches_are_stored_alike() -> None:
    run, _ = ledger.begin_run(thread=make_thread())
    small = events(*[("data-n", {"n": n, "s": "é\n\\"}) for n in range(16)])
    large = events(*[("data-n", {"n": n, "s": "é\n\\"}) for n in range(16, 316)], start=17)
    large[5]["at"] = "2026-01-01T00:00:00Z"
    assert ledger.append_events(run=run, events=small).last_seq == 16
    assert ledger.append_events(run=run, events=large).last_seq == 316
    stored = stored_events(run)
    assert [(seq, data["n"], data["s"]) for seq, _, data in stored] == [
        (n + 1, n, "é\n\\") for n in range(316)
    ]
    assert Event.objects.get(run=run, seq=22).at == datetime(2026, 1, 1, tzinfo=UTC)
    run.refresh_from_db()
    assert run.last_seq == 316


def test_an_exact_re_send_is_a_no_op() -> None:
    run, _ = ledger.begin_run(thread=make_thread())
    batch = deltas("a", "b")
    batch[0]["at"] = "2026-01-01T00:00:00Z"
    ledger.append_events(run=run, events=batch)
    result = ledger.append_events(run=run, events=batch)
    assert (result.last_seq, result.accepted, result.duplicates) == (2, 0, 2)
    assert Event.objects.filter(run=run).count() == 2


def test_a_re_send_is_compared_as_stored_json_not_as_python_values() -> None:
    run, _ = ledger.begin_run(thread=make_thread())
    # jsonb gives 1e23 back as 23 digits, a Python int that differs from the float 1e23.
    batch = [{"seq": 1, "kind": "data-usage", "data": {"big": 1e23, "flag": True}}]
    ledger.append_events(run=run, events=batch)
    assert ledger.append_events(run=run, events=batch).duplicates == 1
    # true and 1 are equal in Python but not in JSON: that is other content.
    with pytest.raises(SeqConflict):
        ledger.append_events(run=run, events=[{**batch[0], "data": {"big": 1e23, "flag": 1}}])
    assert len(stored_events(run)) == 1


def test_an_event_time_postgres_cannot_give_back_is_refused_and_the_run_stays_readable() -> None:
    run, _ = ledger.begin_run(thread=make_thread())
    ledger.append_events(run=run, events=deltas("a"))
    bad = [
        {"seq": 2, "kind": "text-delta", "data": {"delta": "b"}, "at": "0001-01-01T00:00+14:00"},
        {
            "seq": 3,
            "kind": "message",
            "data": {"role": "user", "parts": [], "createdAt": "9999-12-31T23:00:00-14:00"},
        },
    ]
    with pytest.raises(InvalidInput) as caught:
        ledger.append_events(run=run, events=bad)
    assert [p["path"] for p in caught.value.details["problems"]] == [
        "events[0].at",
        "events[1].data.createdAt",
    ]
    assert [e.seq for e in selectors.replay(run=run)] == [1]
    assert ledger.commit_run(run=run).status == RunStatus.COMMITTED


def test_a_partially_overlapping_batch_stores_only_the_new_events() -> None:
    run, _ = ledger.begin_run(thread=make_thread())
    ledger.append_events(run=run, events=deltas("a", "b", "c"))
    result = ledger.append_events(run=run, events=deltas("b", "c", "d", "e", start=2))
    assert (result.last_seq, result.accepted, result.duplicates) == (5, 2, 2)
    assert [data["delta"] for _, _, data in stored_events(run)] == ["a", "b", "c", "d", "e"]


def test_the_same_seq_with_other_content_is_a_seq_conflict() -> None:
    run, _ = ledger.begin_run(thread=make_thread())
    ledger.append_events(run=run, events=deltas("a", "b"))
    with pytest.raises(SeqConflict) as caught:
        ledger.append_events(run=run, events=deltas("a", "X", start=1))
    assert caught.value.details == {"expectedSeq": 3, "lastSeq": 2, "seq": 2}
    with pytest.raises(SeqConflict):
        ledger.append_events(run=run, events=[{**deltas("a")[0], "kind": "data-a"}])
    with pytest.raises(SeqConflict):
        ledger.append_events(run=run, events=[{**deltas("a")[0], "at": "2001-01-01T00:00:00Z"}])
    assert [data["delta"] for _, _, data in stored_events(run)] == ["a", "b"]


def test_a_conflicting_duplicate_in_an_overlapping_batch_stores_nothing() -> None:
    run, _ = ledger.begin_run(thread=make_thread())
    ledger.append_events(run=run, events=deltas("a", "b"))
    with pytest.raises(SeqConflict):
        ledger.append_events(run=run, events=deltas("a", "X", "c", start=1))
    assert len(stored_events(run)) == 2


def test_a_gap_is_a_seq_gap_that_says_which_seq_was_expected() -> None:
    run, _ = ledger.begin_run(thread=make_thread())
    ledger.append_events(run=run, events=deltas("a"))
    with pytest.raises(SeqGap) as caught:
        ledger.append_events(run=run, events=deltas("c", start=3))
    assert caught.value.details == {"expectedSeq": 2, "lastSeq": 1}
    assert caught.value.status == 409
    with pytest.raises(SeqGap):
        ledger.append_events(run=make_run(make_thread(), commit=False), events=deltas("a", start=2))


@pytest.mark.parametrize("close", ["commit", "fail", "cancel"])
def test_new_events_for_a_closed_run_are_refused(close: str) -> None:
    run, _ = ledger.begin_run(thread=make_thread())
    ledger.append_events(run=run, events=deltas("a"))
    if close == "commit":
        ledger.commit_run(run=run)
    elif close == "fail":
        ledger.fail_run(run=run, error="boom")
    else:
        ledger.cancel_run(run=run)
    with pytest.raises(RunClosed) as caught:
        ledger.append_events(run=run, events=deltas("b", start=2))
    assert caught.value.details["expectedSeq"] == 2
    # A retry of what was accepted before closing is still a no-op.
    assert ledger.append_events(run=run, events=deltas("a")).duplicates == 1
    assert len(stored_events(run)) == 1


def test_an_invalid_event_in_a_batch_stores_nothing() -> None:
    run, _ = ledger.begin_run(thread=make_thread())
    batch = [*deltas("a", "b"), {"seq": 3, "kind": "text-delta", "data": {"delta": 3}}]
    with pytest.raises(InvalidInput) as caught:
        ledger.append_events(run=run, events=batch)
    assert caught.value.details["problems"] == [
        {"path": "events[2].data.delta", "message": "Input should be a valid string"}
    ]
    run.refresh_from_db()
    assert (run.last_seq, Event.objects.filter(run=run).count()) == (0, 0)


def test_a_nul_character_is_invalid_input_and_stores_nothing() -> None:
    run, _ = ledger.begin_run(thread=make_thread())
    batch = [*deltas("a"), {"seq": 2, "kind": "data-x", "data": {"k": ["ok", "a\x00"]}}]
    with pytest.raises(InvalidInput) as caught:
        ledger.append_events(run=run, events=batch)
    assert caught.value.details["problems"][0]["path"] == "events[1].data.k[1]"
    with pytest.raises(InvalidInput):
        ledger.append_events(run=run, events=[{"seq": 1, "kind": "data-\x00", "data": {}}])
    assert not Event.objects.filter(run=run).exists()


def test_the_first_append_turns_a_queued_run_into_a_streaming_one() -> None:
    run, _ = ledger.begin_run(thread=make_thread(), status=RunStatus.QUEUED)
    ledger.append_events(run=run, events=deltas("a"))
    run.refresh_from_db()
    assert run.status == RunStatus.STREAMING
    assert run.started_at is not None
    assert run.first_event_at is not None


def test_the_first_append_records_when_the_first_event_arrived() -> None:
    run, _ = ledger.begin_run(thread=make_thread())
    started = run.started_at
    assert started is not None
    ledger.append_events(run=run, events=deltas("a"))
    run.refresh_from_db()
    first = run.first_event_at
    assert run.started_at == started
    assert first is not None and first > started
    ledger.append_events(run=run, events=deltas("b", start=2))
    run.refresh_from_db()
    assert (run.started_at, run.first_event_at) == (started, first)


def test_the_server_stamps_at_when_absent_and_keeps_it_when_given() -> None:
    run, _ = ledger.begin_run(thread=make_thread())
    batch = deltas("a", "b")
    batch[1]["at"] = "2026-11-21T10:00:00+01:00"
    before = timezone.now()
    ledger.append_events(run=run, events=batch)
    after = timezone.now()
    stamped, given = Event.objects.filter(run=run).order_by("seq")
    assert before <= stamped.at <= after
    assert given.at == datetime(2026, 11, 21, 9, 0, tzinfo=UTC)


def test_a_locked_thread_refuses_new_events() -> None:
    run, _ = ledger.begin_run(thread=make_thread())
    Thread.objects.filter(pk=run.thread_id).update(locked=True)
    with pytest.raises(ThreadLocked):
        ledger.append_events(run=run, events=deltas("a"))


def test_appending_to_an_unknown_run_is_not_found() -> None:
    with pytest.raises(NotFound):
        ledger.append_events(run=new_ulid(), events=deltas("a"))
    with pytest.raises(InvalidInput):
        ledger.append_events(run="nope", events=deltas("a"))


def test_an_empty_batch_changes_nothing() -> None:
    run, _ = ledger.begin_run(thread=make_thread())
    assert ledger.append_events(run=run, events=[]).last_seq == 0


# --- commit_run ------------------------------------------------------------------------------


def test_commit_materializes_the_projection_as_the_active_continuation() -> None:
    thread = make_thread()
    prompt = ask(thread, "Why is the sky blue?")
    run = make_run(
        thread,
        ("reasoning", {"text": "Rayleigh"}),
        ("text-delta", {"delta": "Scattering."}),
        ("tool-call", {"toolCallId": "c", "toolName": "cite", "input": {}}),
        ("tool-result", {"toolCallId": "c", "output": "ok", "isError": False}),
        ("text-delta", {"delta": "Done."}),
        commit=False,
    )
    projection = selectors.project_run(run)
    committed = ledger.commit_run(run=run)
    assert committed.status == RunStatus.COMMITTED
    assert committed.finished_at is not None
    messages = list(Message.objects.filter(run=run).order_by("position"))
    assert [m.as_canonical()["id"] for m in messages] == [m["id"] for m in projection.messages]
    assert [m.parts for m in messages] == [m["parts"] for m in projection.messages]
    assert [(m.depth, m.active) for m in messages] == [(1, True), (2, True), (3, True)]
    assert messages[0].parent_id == last_message(prompt).id
    assert [(m.first_seq, m.last_seq) for m in messages] == [(1, 3), (4, 4), (5, 5)]
    thread.refresh_from_db()
    assert thread.head_id == messages[-1].id
    check_all([thread])


def test_commit_sums_the_usage_of_the_run() -> None:
    run = make_run(
        make_thread(),
        ("text-delta", {"delta": "a"}),
        ("step-finished", {"usage": {"inputTokens": 3, "outputTokens": 1}}),
        ("step-finished", {"usage": {"inputTokens": 2}}),
    )
    assert run.usage == {"inputTokens": 5, "outputTokens": 1}


def test_regenerating_moves_the_active_path_and_keeps_the_old_branch() -> None:
    thread = make_thread()
    prompt = last_message(ask(thread, "q"))
    first = say(thread, "first answer")
    say(thread, "follow up")
    second = say(thread, "second answer", fork_from=prompt.id)
    assert active_texts(thread) == ["q", "second answer "]
    old = last_message(first)
    old.refresh_from_db()
    assert not old.active
    assert Message.objects.filter(thread=thread).count() == 4
    assert status_of(first) == RunStatus.SUPERSEDED
    first.refresh_from_db()
    assert first.superseded_by_id == second.id
    thread.refresh_from_db()
    assert thread.head_id == last_message(second).id
    check_all([thread])


def test_it_supersedes_every_committed_run_at_the_fork_point() -> None:
    thread = make_thread()
    prompt = last_message(ask(thread, "q"))
    one = say(thread, "one", fork_from=prompt.id)
    two = say(thread, "two", fork_from=prompt.id)
    open_run = make_run(thread, ("text-delta", {"delta": "open"}), commit=False, fork_from=prompt)
    three = say(thread, "three", fork_from=prompt.id)
    for run in (one, two):
        run.refresh_from_db()
        assert run.status == RunStatus.SUPERSEDED
    assert one.superseded_by_id == two.id  # replaced by two, which three then replaced
    assert two.superseded_by_id == three.id
    assert status_of(open_run) == RunStatus.STREAMING
    assert status_of(three) == RunStatus.COMMITTED
    check_all([thread])


def test_a_new_root_takes_the_whole_active_path() -> None:
    thread = conversation(turns=2)
    root = make_run(thread, user_message("edited first prompt"), fork_from=None)
    assert active_texts(thread) == ["edited first prompt"]
    assert Message.objects.filter(thread=thread).count() == 5
    first_root = Run.objects.filter(thread=thread, fork_from=None).exclude(pk=root.pk).get()
    assert first_root.status == RunStatus.SUPERSEDED
    check_all([thread])


def test_commit_is_idempotent() -> None:
    thread = make_thread()
    run = say(thread, "hello")
    again = ledger.commit_run(run=run.id)
    assert again.status == RunStatus.COMMITTED
    assert Message.objects.filter(run=run).count() == 1
    superseded = say(thread, "other", fork_from=None)
    assert ledger.commit_run(run=run).status == RunStatus.SUPERSEDED
    assert active_texts(thread) == ["other "]
    assert superseded.status == RunStatus.COMMITTED


def test_an_empty_run_commits_and_the_head_stays_at_the_fork_point() -> None:
    thread = conversation(turns=1)
    prompt = Message.objects.get(thread=thread, depth=0)
    run = make_run(thread, fork_from=prompt.id)
    thread.refresh_from_db()
    assert thread.head_id == prompt.id
    assert active_texts(thread) == ["question 0"]
    assert run.status == RunStatus.COMMITTED
    check_all([thread])


def test_committing_from_an_inactive_branch_reactivates_its_ancestors() -> None:
    thread = make_thread()
    prompt = last_message(ask(thread, "q"))
    first = say(thread, "first")
    second = say(thread, "second", fork_from=prompt.id)
    old_leaf = last_message(first)
    follow_up = make_run(thread, user_message("more about first"), fork_from=old_leaf.id)
    assert active_texts(thread) == ["q", "first ", "more about first"]
    thread.refresh_from_db()
    assert thread.head_id == last_message(follow_up).id
    # Continuing the old branch brings its run back; the one that replaced it steps aside.
    assert status_of(first) == RunStatus.COMMITTED
    assert status_of(second) == RunStatus.SUPERSEDED
    second.refresh_from_db()
    assert second.superseded_by_id == first.id
    check_all([thread])


def test_a_failed_or_cancelled_run_cannot_commit() -> None:
    thread = make_thread()
    failed = make_run(thread, ("text-delta", {"delta": "a"}), commit=False)
    ledger.fail_run(run=failed, error="boom")
    cancelled = make_run(thread, commit=False)
    ledger.cancel_run(run=cancelled)
    for run in (failed, cancelled):
        with pytest.raises(RunClosed):
            ledger.commit_run(run=run)
    assert not Message.objects.exists()


def test_a_message_id_already_in_use_is_refused_at_append_and_the_run_stays_usable() -> None:
    thread = make_thread()
    taken = last_message(ask(thread, "q")).id
    run, _ = ledger.begin_run(thread=thread, fork_from=None)
    for kind, data in (
        ("message", {"role": "user", "parts": [], "id": taken.lower()}),
        ("message-start", {"role": "assistant", "messageId": taken}),
    ):
        with pytest.raises(Conflict) as caught:
            ledger.append_events(run=run, events=events((kind, data)))
        assert caught.value.details == {"messageIds": [taken]}
        assert stored_events(run) == []
    ledger.append_events(run=run, events=deltas("fresh"))
    ledger.commit_run(run=run)
    assert active_texts(thread) == ["fresh"]


def test_message_ids_taken_between_append_and_commit_are_a_conflict() -> None:
    thread = make_thread()
    wanted = new_ulid()
    run = make_run(
        thread,
        ("message", {"role": "user", "parts": [], "id": wanted}),
        commit=False,
        fork_from=None,
    )
    make_run(thread, ("message", {"role": "user", "parts": [], "id": wanted}), fork_from=None)
    with pytest.raises(Conflict) as caught:
        ledger.commit_run(run=run)
    assert caught.value.details == {"messageIds": [wanted]}
    assert status_of(run) == RunStatus.STREAMING


def test_a_locked_thread_refuses_commits() -> None:
    thread = make_thread()
    run = make_run(thread, ("text-delta", {"delta": "a"}), commit=False)
    Thread.objects.filter(pk=thread.pk).update(locked=True)
    with pytest.raises(ThreadLocked):
        ledger.commit_run(run=run)


# --- restore_run -----------------------------------------------------------------------------


def test_restore_makes_a_superseded_branch_active_again() -> None:
    thread = make_thread()
    prompt = last_message(ask(thread, "q"))
    first = say(thread, "first")
    deeper = say(thread, "deeper")
    second = say(thread, "second", fork_from=prompt.id)
    restored = ledger.restore_run(run=first)
    assert restored.status == RunStatus.COMMITTED
    assert restored.superseded_by_id is None
    assert active_texts(thread) == ["q", "first ", "deeper "]
    thread.refresh_from_db()
    assert thread.head_id == last_message(deeper).id
    second.refresh_from_db()
    assert (second.status, second.superseded_by_id) == (RunStatus.SUPERSEDED, first.id)
    check_all([thread])


def test_restore_follows_the_latest_committed_continuation() -> None:
    thread = make_thread()
    prompt = last_message(ask(thread, "q"))
    first = say(thread, "first")
    below = last_message(first).id
    say(thread, "older follow up")
    newer = say(thread, "newer follow up", fork_from=below)
    say(thread, "second", fork_from=prompt.id)
    ledger.restore_run(run=first)
    assert active_texts(thread) == ["q", "first ", "newer follow up "]
    assert status_of(newer) == RunStatus.COMMITTED
    check_all([thread])


def test_restore_brings_back_superseded_ancestors() -> None:
    thread = make_thread()
    original_root = ask(thread, "q")
    answer = say(thread, "a")
    make_run(thread, user_message("edited"), fork_from=None)
    regenerated = say(thread, "b", fork_from=last_message(original_root).id)
    # The original prompt is off the active path; restoring an answer below it brings it back.
    ledger.restore_run(run=answer)
    assert active_texts(thread) == ["q", "a "]
    assert status_of(original_root) == RunStatus.COMMITTED
    assert status_of(regenerated) == RunStatus.SUPERSEDED
    check_all([thread])


def test_restoring_a_committed_run_is_a_no_op_and_an_open_one_a_conflict() -> None:
    thread = make_thread()
    run = say(thread, "a")
    assert ledger.restore_run(run=run).status == RunStatus.COMMITTED
    open_run = make_run(thread, commit=False)
    with pytest.raises(Conflict):
        ledger.restore_run(run=open_run)


def test_restoring_an_empty_superseded_run_moves_the_head_to_its_fork_point() -> None:
    thread = make_thread()
    prompt = last_message(ask(thread, "q"))
    empty = make_run(thread, fork_from=prompt.id)
    say(thread, "answer", fork_from=prompt.id)
    ledger.restore_run(run=empty)
    thread.refresh_from_db()
    assert thread.head_id == prompt.id
    assert active_texts(thread) == ["q"]
    check_all([thread])


# --- fail and cancel -------------------------------------------------------------------------


def test_fail_keeps_the_events_and_materializes_nothing() -> None:
    run = make_run(make_thread(), ("text-delta", {"delta": "partial"}), commit=False)
    failed = ledger.fail_run(run=run, error={"message": "model overloaded", "code": 529})
    assert failed.status == RunStatus.FAILED
    assert failed.error == {"message": "model overloaded", "code": 529}
    assert failed.finished_at is not None
    assert len(stored_events(run)) == 1
    assert not Message.objects.exists()
    assert selectors.project_run(run).messages[0]["parts"] == [{"type": "text", "text": "partial"}]
    assert ledger.fail_run(run=run, error="again").error == {
        "message": "model overloaded",
        "code": 529,
    }


def test_cancel_keeps_the_events_and_materializes_nothing() -> None:
    run = make_run(make_thread(), ("text-delta", {"delta": "partial"}), commit=False)
    assert ledger.cancel_run(run=run).status == RunStatus.CANCELLED
    assert ledger.cancel_run(run=run).status == RunStatus.CANCELLED
    assert len(stored_events(run)) == 1
    assert not Message.objects.exists()
    with pytest.raises(RunClosed):
        ledger.fail_run(run=run, error="late")


def test_a_committed_run_cannot_fail_and_errors_must_have_a_message() -> None:
    run = say(make_thread(), "done")
    with pytest.raises(RunClosed):
        ledger.fail_run(run=run, error="late")
    open_run = make_run(make_thread(), commit=False)
    for error in ({"code": 1}, 42, {"message": "a\x00"}):
        with pytest.raises(InvalidInput):
            ledger.fail_run(run=open_run, error=error)
    assert status_of(open_run) == RunStatus.STREAMING


# --- replay and projection -------------------------------------------------------------------


def test_replay_refuses_cursors_that_are_not_integers_and_caps_huge_ones() -> None:
    run, _ = ledger.begin_run(thread=make_thread())
    ledger.append_events(run=run, events=deltas("a", "b"))
    for after_seq, limit in (("1", 10), (0, 2.0), (True, 10), (-1, 10), (0, 0)):
        with pytest.raises(InvalidInput):
            selectors.replay(run=run, after_seq=after_seq, limit=limit)
    assert [e.seq for e in selectors.replay(run=run, after_seq=0, limit=2**70)] == [1, 2]
    assert selectors.replay(run=run, after_seq=2**70) == []


def test_replay_pages_through_the_events_in_order() -> None:
    run = make_run(make_thread(), *[("text-delta", {"delta": str(n)}) for n in range(10)])
    assert [e.seq for e in selectors.replay(run=run)] == list(range(1, 11))
    assert [e.seq for e in selectors.replay(run=run, after_seq=3, limit=4)] == [4, 5, 6, 7]
    assert [e.seq for e in selectors.replay(run=run.id, after_seq=8)] == [9, 10]
    assert selectors.replay(run=run, after_seq=10) == []
    page = selectors.replay(run=run, after_seq=1, limit=1)[0].as_dict()
    assert (page["seq"], page["kind"], page["data"]) == (2, "text-delta", {"delta": "1"})
    for bad in ({"after_seq": -1}, {"limit": 0}):
        with pytest.raises(InvalidInput):
            selectors.replay(run=run, **bad)


def test_a_run_can_be_projected_mid_stream() -> None:
    run = make_run(make_thread(), ("text-delta", {"delta": "Hel"}), commit=False)
    ledger.append_events(run=run, events=deltas("lo", start=2))
    projection = selectors.project_run(run)
    assert projection.open
    assert projection.messages[0]["parts"] == [{"type": "text", "text": "Hello"}]


# --- NOTIFY ----------------------------------------------------------------------------------


def _listener(channel: str) -> psycopg.Connection[Any]:
    db = connection.settings_dict
    listener = psycopg.connect(
        dbname=db["NAME"],
        user=db["USER"],
        password=db["PASSWORD"] or None,
        host=db["HOST"] or None,
        port=db["PORT"] or None,
        autocommit=True,
    )
    listener.execute(f'LISTEN "{channel}"')
    return listener


def _received(listener: psycopg.Connection[Any], timeout: float) -> list[dict[str, Any]]:
    return [json.loads(n.payload) for n in listener.notifies(timeout=timeout, stop_after=1)]


@pytest.mark.django_db(transaction=True)
def test_an_append_notifies_listeners_when_its_transaction_commits() -> None:
    run, _ = ledger.begin_run(thread=make_thread())
    listener = _listener(ledger.run_channel(run.id))
    try:
        with transaction.atomic():
            ledger.append_events(run=run, events=deltas("a", "b"))
            assert _received(listener, timeout=0.3) == []
        assert _received(listener, timeout=5) == [{"lastSeq": 2, "status": "streaming"}]
        ledger.commit_run(run=run)
        assert _received(listener, timeout=5) == [{"lastSeq": 2, "status": "committed"}]
    finally:
        listener.close()


@pytest.mark.django_db(transaction=True)
def test_a_rolled_back_append_notifies_nobody() -> None:
    run, _ = ledger.begin_run(thread=make_thread())
    listener = _listener(ledger.run_channel(run.id))
    try:
        with pytest.raises(RuntimeError), transaction.atomic():
            ledger.append_events(run=run, events=deltas("a"))
            raise RuntimeError("roll back")
        assert _received(listener, timeout=0.5) == []
        assert not Event.objects.filter(run=run).exists()
    finally:
        listener.close()


def test_restoring_a_committed_run_off_the_active_path_brings_its_branch_back():
    from tests.factories import conversation
    from transcripts.selectors import active_path

    thread = conversation(turns=0)
    both = make_run(
        thread,
        ("message", {"role": "user", "parts": [{"type": "text", "text": "q"}]}),
        ("text-delta", {"delta": "first answer"}),
    )
    prompt, first = list(both.messages.order_by("position"))
    regenerated = make_run(thread, ("text-delta", {"delta": "second"}), fork_from=prompt.id)
    assert [m.id for m in active_path(thread)] == [prompt.id, regenerated.messages.get().id]
    assert Run.objects.get(pk=both.id).status == RunStatus.COMMITTED

    ledger.restore_run(run=both.id)
    assert [m.id for m in active_path(thread)] == [prompt.id, first.id]
    thread.refresh_from_db()
    assert thread.head_id == first.id
    check_all([thread])
