"""The table of moderation actions drives the surfaces: the queue offers every action taken
from a report (and resolve and dismiss), the admin every action on its target's list, to the
roles the table says; an entry added to the table shows up in the queue and in the admin's
list of its target, and works in both.

The conversation's menu offers no moderation action today (only "Report message…"), so no
entry applies to it."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.contrib.messages import get_messages
from django.db.models import DateTimeField
from django.urls import reverse
from django.utils import timezone

from tests.base import Team
from tests.web.test_moderation_views import HTMX, _act, _alpha_report
from transcripts.ledger import moderation
from transcripts.ledger.moderation_actions import ModerationAction
from transcripts.models import Message, Report, Thread
from transcripts.permissions import Role

pytestmark = pytest.mark.django_db


def _put_where_offered(report: Report, action: ModerationAction) -> None:
    """Set the report's thread or message in the state in which action is offered."""
    if action.offered_when is None:
        return
    field, is_set = action.offered_when
    model = Thread if action.target == "thread" else Message
    stamped = isinstance(model._meta.get_field(field), DateTimeField)
    value = (timezone.now() if stamped else True) if is_set else (None if stamped else False)
    pk = report.thread_id if action.target == "thread" else report.message_id
    model.objects.filter(pk=pk).update(**{field: value})


def _offers(page: str, action: ModerationAction) -> bool:
    """Whether a queue page offers action (confirmed ones link to their confirmation)."""
    if action.target == "report":
        return f">{action.label}</button>" in page
    if action.confirm:
        return f">{action.label}…</a>" in page
    return f'<button type="submit" name="action" value="{action.name}"' in page


@pytest.mark.parametrize(
    "name", [a.name for a in moderation.ACTIONS.values() if a.on_reports or a.target == "report"]
)
def test_the_queue_offers_each_report_action_to_the_role_it_needs(team: Team, name: str) -> None:
    action = moderation.ACTIONS[name]
    report = _alpha_report(team)
    _put_where_offered(report, action)
    assert _offers(team.client(team.owner).get("/moderation/").content.decode(), action)
    by_moderator = _offers(team.client(team.moderator).get("/moderation/").content.decode(), action)
    assert by_moderator == (action.role <= Role.MODERATOR)


def _staff(*users: User) -> None:
    User.objects.filter(pk__in=[user.pk for user in users]).update(is_staff=True)


@pytest.mark.parametrize("name", list(moderation.ACTIONS))
def test_the_admin_offers_each_action_to_the_role_it_needs(team: Team, name: str) -> None:
    action = moderation.ACTIONS[name]
    _staff(team.owner, team.moderator)
    url = reverse(f"admin:transcripts_{action.target}_changelist")
    option = f'<option value="{action.admin_name or name}">'
    assert option in team.client(team.owner).get(url).content.decode()
    by_moderator = option in team.client(team.moderator).get(url).content.decode()
    assert by_moderator == (action.role <= Role.MODERATOR)


def test_an_entry_added_to_the_table_shows_up_in_the_queue_and_the_admin_and_works(
    team: Team, monkeypatch: pytest.MonkeyPatch
) -> None:
    pinned: list[Thread] = []

    def pin_thread(*, user: Any, thread: Thread, reason: str) -> bool:
        pinned.append(thread)
        return True

    pin = ModerationAction(
        name="pin",
        target="thread",
        role=Role.MODERATOR,
        label="Pin thread",
        done="Pinned",
        state="pinned",
        audit="pin",
        perform=pin_thread,
        on_reports=True,
    )
    monkeypatch.setitem(moderation.ACTIONS, "pin", pin)
    report = _alpha_report(team)
    client = team.client(team.moderator)
    assert _offers(client.get("/moderation/").content.decode(), pin)
    done = client.post(
        _act(report), {"action": "pin", "reason": "x", "resolve": "on"}, headers=HTMX
    ).content.decode()
    assert f"Pinned 1 thread. Resolved report {report.pk}." in done
    assert [thread.pk for thread in pinned] == [report.thread_id]
    _staff(team.moderator)
    threads = reverse("admin:transcripts_thread_changelist")
    assert '<option value="pin">Pin thread</option>' in client.get(threads).content.decode()
    listed = client.post(
        threads,
        {"action": "pin", "_selected_action": [report.thread_id], "reason": "y"},
        follow=True,
    )
    notes = [(m.level_tag, str(m)) for m in get_messages(listed.wsgi_request)]
    assert notes == [("success", "Pinned 1 thread.")]
    assert [thread.pk for thread in pinned] == [report.thread_id, report.thread_id]
