"""Events over the API: append batches, and replay what is stored."""

from __future__ import annotations

import pytest
from django.test import override_settings

from tests.api.conftest import error_of
from tests.factories import events, make_run, make_thread, say
from transcripts.models import Event, Run, RunStatus, Thread

pytestmark = pytest.mark.django_db


def _deltas(*words: str, start: int = 1) -> list[dict]:
    return events(*(("text-delta", {"delta": w}) for w in words), start=start)


def test_it_appends_events_and_reports_the_last_seq(api):
    run = make_run(make_thread(), commit=False)

    response = api.post(f"/runs/{run.id}/events", {"events": _deltas("a", "b")})

    assert response.status_code == 200
    assert response.json() == {"lastSeq": 2, "accepted": 2, "duplicates": 0}
    assert list(Event.objects.filter(run=run).values_list("seq", flat=True)) == [1, 2]


def test_an_exact_resend_is_a_no_op(api):
    run = make_run(make_thread(), commit=False)
    batch = {"events": _deltas("a", "b")}
    api.post(f"/runs/{run.id}/events", batch)

    response = api.post(f"/runs/{run.id}/events", batch)

    assert response.json() == {"lastSeq": 2, "accepted": 0, "duplicates": 2}


def test_a_gap_is_a_409_that_names_the_expected_seq(api):
    run = make_run(make_thread(), commit=False)

    response = api.post(f"/runs/{run.id}/events", {"events": _deltas("a", start=3)})

    assert response.status_code == 409
    error = error_of(response)
    assert error["code"] == "seq_gap"
    assert error["details"]["expectedSeq"] == 1


def test_the_same_seq_with_other_content_is_a_409(api):
    run = make_run(make_thread(), commit=False)
    api.post(f"/runs/{run.id}/events", {"events": _deltas("a")})

    response = api.post(f"/runs/{run.id}/events", {"events": _deltas("b")})

    assert response.status_code == 409
    assert error_of(response)["code"] == "seq_conflict"
    assert error_of(response)["details"]["expectedSeq"] == 2


def test_appending_to_a_closed_run_is_a_409(api):
    run = say(make_thread(), "done")

    response = api.post(f"/runs/{run.id}/events", {"events": _deltas("more", start=2)})

    assert response.status_code == 409
    assert error_of(response)["code"] == "run_closed"
    assert error_of(response)["details"]["expectedSeq"] == 2


def test_an_invalid_event_is_a_422_naming_index_and_field(api):
    run = make_run(make_thread(), commit=False)
    batch = [*_deltas("fine"), {"seq": 2, "kind": "text-delta", "data": {"delta": 5}}]

    response = api.post(f"/runs/{run.id}/events", {"events": batch})

    assert response.status_code == 422
    problems = error_of(response)["details"]["problems"]
    assert problems[0]["path"] == "events[1].data.delta"
    assert Event.objects.filter(run=run).count() == 0  # all or nothing


def test_a_malformed_envelope_is_a_422_naming_index_and_field(api):
    run = make_run(make_thread(), commit=False)

    for event, path in [
        ({"seq": "1", "kind": "text-delta"}, "events[0].seq"),
        ({"seq": 0, "kind": "text-delta"}, "events[0].seq"),
        ({"seq": 1}, "events[0].kind"),
        ({"seq": 1, "kind": "bogus"}, "events[0].kind"),
        ({"seq": 1, "kind": "error", "data": {"message": "x"}, "at": "yesterday"}, "events[0].at"),
    ]:
        response = api.post(f"/runs/{run.id}/events", {"events": [event]})
        assert response.status_code == 422, event
        assert error_of(response)["details"]["problems"][0]["path"] == path, event


@override_settings(TRANSCRIPTS_MAX_BATCH_EVENTS=3)
def test_a_batch_longer_than_the_limit_is_a_422(api):
    run = make_run(make_thread(), commit=False)

    response = api.post(f"/runs/{run.id}/events", {"events": _deltas("a", "b", "c", "d")})

    assert response.status_code == 422
    assert error_of(response)["details"]["maxEvents"] == 3


def test_it_replays_events_with_a_cursor(api):
    run = make_run(make_thread(), *[("text-delta", {"delta": str(i)}) for i in range(5)])

    first = api.get(f"/runs/{run.id}/events", limit=3).json()
    second = api.get(f"/runs/{run.id}/events", afterSeq=first["nextAfterSeq"], limit=3).json()

    assert [e["seq"] for e in first["events"]] == [1, 2, 3] and first["hasMore"]
    assert [e["seq"] for e in second["events"]] == [4, 5] and not second["hasMore"]
    assert second["nextAfterSeq"] == 5
    assert first["events"][0]["kind"] == "text-delta"
    assert first["events"][0]["data"] == {"delta": "0"}


def test_replay_refuses_out_of_range_parameters(api):
    run = make_run(make_thread(), commit=False)

    assert api.get(f"/runs/{run.id}/events", afterSeq=-1).status_code == 422
    assert api.get(f"/runs/{run.id}/events", limit=0).status_code == 422
    assert api.get(f"/runs/{run.id}/events", afterSeq=2**40).status_code == 422
    assert api.get(f"/runs/{run.id}/events", limit="many").status_code == 422


def test_events_to_a_run_of_a_locked_thread_are_a_409(api):
    thread = make_thread()
    run = make_run(thread, commit=False)
    Thread.objects.filter(pk=thread.pk).update(locked=True)

    response = api.post(f"/runs/{run.id}/events", {"events": _deltas("x")})

    assert response.status_code == 409
    assert error_of(response)["code"] == "thread_locked"
    assert Run.objects.get(pk=run.id).status == RunStatus.STREAMING
