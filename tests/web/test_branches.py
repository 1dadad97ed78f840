"""Branch state in the switcher and in compare: active or alternative, one Restore per branch."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.base import Team
from tests.factories import ask, last_message, make_run, make_thread, say, user_message
from transcripts.models import Message, Project, Run, RunStatus, Thread

pytestmark = pytest.mark.django_db

RESTORE_FORM = 'class="gen-inline sib-restore"'


def _active_ids(thread: Thread) -> list[str]:
    return list(
        Message.objects.filter(thread=thread, active=True)
        .order_by("depth")
        .values_list("id", flat=True)
    )


def _regenerated_last_answer(project: Project) -> tuple[Thread, Run, Message, Message, Run]:
    """A reply run that wrote the prompt and its answer, then the answer regenerated.

    Returns the thread, the reply run, its prompt, its (old) answer and the regenerating run.
    """
    thread = make_thread("Regenerated", project=project)
    ask(thread, "Hello")
    say(thread, "Hi there")
    reply = make_run(
        thread, user_message("What is Postgres?"), ("text-delta", {"delta": "A database."})
    )
    prompt, old = reply.messages.order_by("position")
    new = say(thread, "An object-relational database system.", fork_from=prompt.id)
    thread.refresh_from_db()
    return thread, reply, prompt, old, new


def _edited_above_a_regeneration(project: Project) -> tuple[Thread, dict[str, Message], Run]:
    """Prompt U1 (run A, with answer A1), A1 regenerated as A1b, then U1 edited (U1e, A1e).

    The active path ends at A1e; U1's branch holds two answers, neither active. Returns the
    thread, its messages by name and run A (superseded by the edit).
    """
    thread = make_thread("Edited", project=project)
    ask(thread, "Hello")
    greeting = last_message(say(thread, "Hi there"))
    run_a = make_run(thread, user_message("U1 question"), ("text-delta", {"delta": "A1 answer"}))
    u1, a1 = run_a.messages.order_by("position")
    a1b = last_message(say(thread, "A1b answer", fork_from=u1.id))
    edit = make_run(
        thread,
        user_message("U1 edited question"),
        ("text-delta", {"delta": "A1e answer"}),
        fork_from=greeting.id,
    )
    u1e, a1e = edit.messages.order_by("position")
    thread.refresh_from_db()
    run_a.refresh_from_db()
    messages = {"greeting": greeting, "u1": u1, "a1": a1, "a1b": a1b, "u1e": u1e, "a1e": a1e}
    return thread, messages, run_a


# --- compare ------------------------------------------------------------------------------


def test_after_regenerating_the_last_answer_compare_offers_to_restore_the_old_one(
    team: Team,
) -> None:
    thread, reply, prompt, old, new = _regenerated_last_answer(team.alpha)
    # The run that wrote the prompt is not superseded at the prompt: it forked above it.
    assert reply.status == RunStatus.COMMITTED
    editor = team.client(team.editor)
    url = f"/t/{thread.id}/fork/{prompt.id}/compare/"
    response = editor.get(url)
    columns = response.context["columns"]
    assert [(c.run.id, c.kind) for c in columns] == [(new.id, "active"), (reply.id, "alternative")]
    html = response.content.decode()
    assert f'action="/runs/{reply.id}/restore/"' in html
    assert f'action="/runs/{new.id}/restore/"' not in html
    assert html.count("Make this answer active") == 1
    response = editor.post(f"/runs/{reply.id}/restore/", {"next": url})
    assert response.status_code == 303 and response["Location"] == url
    thread.refresh_from_db()
    assert thread.head_id == old.id
    assert _active_ids(thread)[-2:] == [prompt.id, old.id]
    # Now the regenerated answer is the alternative, restorable in turn.
    columns = editor.get(url).context["columns"]
    assert [(c.run.id, c.kind, c.restorable) for c in columns] == [
        (reply.id, "active", False),
        (new.id, "alternative", True),
    ]


def test_compare_labels_each_message_active_or_alternative(team: Team) -> None:
    thread, messages, run_a = _edited_above_a_regeneration(team.alpha)
    editor = team.client(team.editor)
    columns = editor.get(f"/t/{thread.id}/fork/{messages['greeting'].id}/compare/").context[
        "columns"
    ]
    by_run = {c.run.id: c for c in columns}
    column_a = by_run[run_a.id]
    assert run_a.status == RunStatus.SUPERSEDED
    assert [card.state for card in column_a.cards] == ["alternative", "alternative"]
    assert column_a.kind == "alternative" and column_a.restorable
    edit_column = columns[0]
    assert [card.state for card in edit_column.cards] == ["active", "active"]
    assert edit_column.kind == "active" and not edit_column.restorable


# --- the switcher -------------------------------------------------------------------------


def test_the_switcher_says_active_or_alternative_and_offers_one_restore(team: Team) -> None:
    thread, reply, _, old, _ = _regenerated_last_answer(team.alpha)
    editor = team.client(team.editor)
    html = editor.get(f"/t/{thread.id}/?leaf={old.id}").content.decode()
    assert html.count(RESTORE_FORM) == 1
    assert f'action="/runs/{reply.id}/restore/"' in html
    assert f'name="leaf" value="{old.id}"' in html
    assert ">alternative</span>" in html and "Make this answer active" in html
    # On the active branch: "active", and nothing to restore.
    html = editor.get(f"/t/{thread.id}/").content.decode()
    assert ">active</span>" in html and RESTORE_FORM not in html
    editor.post(f"/runs/{reply.id}/restore/", {"next": f"/t/{thread.id}/", "leaf": old.id})
    thread.refresh_from_db()
    assert thread.head_id == old.id


def test_a_branch_below_an_edit_shows_one_restore_that_activates_exactly_that_branch(
    team: Team,
) -> None:
    thread, m, run_a = _edited_above_a_regeneration(team.alpha)
    editor = team.client(team.editor)
    html = editor.get(f"/t/{thread.id}/?leaf={m['a1b'].id}").content.decode()
    # U1 leaves the active path (its sibling is active); A1b lies below it on the same
    # branch: it says "alternative" but restoring it would do the same, so it offers nothing.
    assert html.count(RESTORE_FORM) == 1
    assert html.count(">alternative</span>") == 2
    assert f'action="/runs/{run_a.id}/restore/"' in html
    assert "Make this message active" in html
    response = editor.post(
        f"/runs/{run_a.id}/restore/", {"next": f"/t/{thread.id}/", "leaf": m["a1b"].id}
    )
    assert response.status_code == 303
    thread.refresh_from_db()
    # The branch shown (U1 then A1b), not run A's own answer A1.
    assert thread.head_id == m["a1b"].id
    assert _active_ids(thread)[-3:] == [m["greeting"].id, m["u1"].id, m["a1b"].id]
    run_a.refresh_from_db()
    assert run_a.status == RunStatus.COMMITTED
    assert Run.objects.get(messages=m["u1e"]).status == RunStatus.SUPERSEDED
    # The other answer under U1 is an alternative now, with its own Restore.
    html = editor.get(f"/t/{thread.id}/?leaf={m['a1'].id}").content.decode()
    assert html.count(RESTORE_FORM) == 1
    assert f'action="/runs/{run_a.id}/restore/"' in html
    editor.post(f"/runs/{run_a.id}/restore/", {"next": f"/t/{thread.id}/", "leaf": m["a1"].id})
    thread.refresh_from_db()
    assert thread.head_id == m["a1"].id


def test_a_leaf_off_the_runs_branch_is_refused_and_changes_nothing(team: Team) -> None:
    thread, m, run_a = _edited_above_a_regeneration(team.alpha)
    before = _active_ids(thread)
    editor = team.client(team.editor)
    response = editor.post(f"/runs/{run_a.id}/restore/", {"leaf": m["a1e"].id})
    assert response.status_code == 422
    assert b"does not go through this run" in response.content
    assert _active_ids(thread) == before
    assert editor.post(f"/runs/{run_a.id}/restore/", {"leaf": "nope"}).status_code == 404


# --- who may ------------------------------------------------------------------------------


def test_a_viewer_sees_the_states_but_no_restore_and_gets_403(team: Team) -> None:
    thread, reply, prompt, old, _ = _regenerated_last_answer(team.alpha)
    viewer = team.client(team.viewer)
    html = viewer.get(f"/t/{thread.id}/?leaf={old.id}").content.decode()
    assert ">alternative</span>" in html and RESTORE_FORM not in html
    compare = viewer.get(f"/t/{thread.id}/fork/{prompt.id}/compare/").content.decode()
    assert "/restore/" not in compare and ">alternative</span>" in compare
    response = viewer.post(f"/runs/{reply.id}/restore/", {"leaf": old.id})
    assert response.status_code == 403 and b"editor" in response.content
    thread.refresh_from_db()
    assert thread.head_id != old.id


def test_an_outsider_gets_404_for_the_branches_and_their_restore(team: Team) -> None:
    thread, reply, prompt, old, _ = _regenerated_last_answer(team.alpha)
    outsider: Client = team.client(team.outsider)
    assert outsider.get(f"/t/{thread.id}/?leaf={old.id}").status_code == 404
    assert outsider.get(f"/t/{thread.id}/fork/{prompt.id}/compare/").status_code == 404
    assert outsider.post(f"/runs/{reply.id}/restore/", {"leaf": old.id}).status_code == 404
    thread.refresh_from_db()
    assert thread.head_id != old.id


def test_a_page_of_earlier_messages_restores_the_branch_being_read(team: Team) -> None:
    # q0 a0 q1 a1, then a0 regenerated: the old branch a0 → q1 → a1 is an alternative.
    thread = make_thread("Paged", project=team.alpha)
    q0 = last_message(ask(thread, "question 0"))
    a0 = last_message(say(thread, "answer 0"))
    ask(thread, "question 1")
    a1 = last_message(say(thread, "answer 1"))
    say(thread, "answer 0 again", fork_from=q0.id)
    client = team.client(team.editor)
    # "Load earlier" while reading the old branch at a1: its Restore names that branch's leaf,
    # so the branch being read comes back, not whichever is newest below a0.
    page = client.get(
        f"/t/{thread.id}/?dir=before&from={a1.id}&leaf={a1.id}", headers={"HX-Request": "true"}
    ).content.decode()
    form = page[page.index(RESTORE_FORM) :]
    assert f'name="leaf" value="{a1.id}"' in form[: form.index("</form>")]
    assert f'id="m-{a0.id}"' in page
