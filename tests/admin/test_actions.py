"""Every admin action by role: it acts only on records of the projects where the user holds the
role it needs (moderator: hide, lock, flag, reports; admin: redact, delete, tokens, members),
each through its audited service; anything else selected is left alone."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from tests.admin.conftest import Records
from tests.base import Team
from transcripts.ledger import moderation
from transcripts.ledger.projects import set_member
from transcripts.models import AuditRecord, Message, Thread

pytestmark = pytest.mark.django_db

CONFIRMED = {"confirmed": "yes", "confirmed_reason": "leaked data"}


@dataclass(frozen=True)
class Action:
    """An admin action: its list, the record it acts on, its audit record, what it needs."""

    model: str
    name: str
    target: str  # the attribute of Records it acts on
    audited: str  # the action of the audit record it writes
    role: str  # the role it needs: moderator or admin
    form: dict[str, Any] = field(default_factory=dict)
    prepare: Callable[[Team, Records], object] | None = None

    def post(self, client: Client, *records: Records, follow: bool = False, **extra: Any) -> Any:
        """Post the action on the target of each records (extra: more form fields)."""
        ids = [records_.pk(self.target) for records_ in records]
        return client.post(
            reverse(f"admin:transcripts_{self.model}_changelist"),
            {"action": self.name, "_selected_action": ids, **self.form, **extra},
            follow=follow,
        )

    def done(self, records: Records) -> bool:
        """Whether the action was taken on records' target (its audit record exists)."""
        target = str(records.pk(self.target))
        return AuditRecord.objects.filter(action=self.audited, target_id=target).exists()


def _hidden(team: Team, records: Records) -> object:
    return moderation.hide_thread(user=team.superuser, thread=records.thread)


def _locked(team: Team, records: Records) -> object:
    return moderation.lock_thread(user=team.superuser, thread=records.thread)


def _flagged(team: Team, records: Records) -> object:
    return moderation.flag_message(user=team.superuser, message=records.message, reason="rude")


ACTIONS = [
    Action("thread", "hide", "thread", "hide", "moderator", {"reason": "spam"}),
    Action("thread", "unhide", "thread", "unhide", "moderator", prepare=_hidden),
    Action("thread", "lock", "thread", "lock", "moderator"),
    Action("thread", "unlock", "thread", "unlock", "moderator", prepare=_locked),
    Action("message", "flag", "message", "flag", "moderator", {"reason": "rude"}),
    Action("message", "unflag", "message", "unflag", "moderator", prepare=_flagged),
    Action("report", "resolve", "report", "resolve_report", "moderator"),
    Action("report", "dismiss", "report", "dismiss_report", "moderator"),
    Action("thread", "delete_with_reason", "thread", "delete", "admin", CONFIRMED),
    Action("message", "redact", "message", "redact", "admin", CONFIRMED),
    Action("run", "redact_content", "failed_run", "redact", "admin", CONFIRMED),
    Action("apitoken", "revoke", "apitoken", "revoke_token", "admin"),
    Action(
        "membership", "delete_selected", "membership", "remove_member", "admin", {"post": "yes"}
    ),
]
ACTION_IDS = [f"{action.model}-{action.name}" for action in ACTIONS]
MODERATION_ACTIONS = [action for action in ACTIONS if action.model != "membership"]


def _prepare(action: Action, team: Team, *records: Records) -> None:
    if action.prepare is not None:
        for records_ in records:
            action.prepare(team, records_)


@pytest.mark.parametrize("action", ACTIONS, ids=ACTION_IDS)
def test_the_outsider_posting_an_action_with_alphas_ids_changes_nothing(
    staff: Team, alpha: Records, beta: Records, action: Action
) -> None:
    _prepare(action, staff, alpha)
    before = AuditRecord.objects.count()
    response = action.post(staff.client(staff.outsider), alpha)
    assert response.status_code == 302
    assert not action.done(alpha)
    assert AuditRecord.objects.count() == before
    assert Thread.objects.filter(pk=alpha.thread.pk).exists()


@pytest.mark.parametrize("action", ACTIONS, ids=ACTION_IDS)
def test_an_action_on_every_row_acts_only_in_the_users_projects(
    staff: Team, alpha: Records, beta: Records, action: Action
) -> None:
    _prepare(action, staff, alpha, beta)
    action.post(staff.client(staff.outsider), beta, select_across="1")
    assert action.done(beta)
    assert not action.done(alpha)


@pytest.mark.parametrize("who", ["viewer", "editor", "stranger"])
@pytest.mark.parametrize("action", ACTIONS, ids=ACTION_IDS)
def test_members_without_the_role_are_refused_every_action(
    staff: Team, alpha: Records, who: str, action: Action
) -> None:
    _prepare(action, staff, alpha)
    response = action.post(staff.client(getattr(staff, who)), alpha)
    assert response.status_code == 403
    assert not action.done(alpha)


@pytest.mark.parametrize("action", ACTIONS, ids=ACTION_IDS)
def test_alphas_moderator_takes_the_moderation_actions_and_is_not_offered_the_others(
    staff: Team, alpha: Records, action: Action
) -> None:
    _prepare(action, staff, alpha)
    client = staff.client(staff.moderator)
    response = action.post(client, alpha)
    if action.role == "moderator":
        assert response.status_code == 302
        assert action.done(alpha)
        return
    assert response.status_code in (200, 302, 403)  # the list, without such an action; or none
    assert not action.done(alpha)
    changelist = client.get(reverse(f"admin:transcripts_{action.model}_changelist"))
    if changelist.status_code == 200:
        form = changelist.context["action_form"]  # None: no action at all
        assert form is None or action.name not in dict(form.fields["action"].choices)


@pytest.mark.parametrize("action", ACTIONS, ids=ACTION_IDS)
def test_alphas_owner_takes_every_action_in_alpha(
    staff: Team, alpha: Records, action: Action
) -> None:
    _prepare(action, staff, alpha)
    assert action.post(staff.client(staff.owner), alpha).status_code == 302
    assert action.done(alpha)
    record = AuditRecord.objects.filter(action=action.audited).latest("created_at")
    assert record.actor == staff.owner and record.project == alpha.project


@pytest.mark.parametrize("action", ACTIONS, ids=ACTION_IDS)
def test_the_superuser_acts_in_both_projects(
    staff: Team, alpha: Records, beta: Records, action: Action
) -> None:
    _prepare(action, staff, alpha, beta)
    assert action.post(staff.client(staff.superuser), alpha, beta).status_code == 302
    assert action.done(alpha) and action.done(beta)


def test_an_admin_action_leaves_alone_what_the_user_only_moderates_and_says_so(
    staff: Team, alpha: Records, beta: Records
) -> None:
    set_member(project=staff.alpha, user=staff.outsider, role="moderator")
    client = staff.client(staff.outsider)
    redact = next(action for action in ACTIONS if action.name == "redact")
    response = redact.post(client, alpha, beta, follow=True)
    assert redact.done(beta) and not redact.done(alpha)
    assert Message.objects.get(pk=alpha.message.pk).redacted_at is None
    notes = [str(message) for message in response.context["messages"]]
    assert any("1 selected object(s) left alone" in note and "admin role" in note for note in notes)
    # Moderating alpha is still allowed.
    hide = next(action for action in ACTIONS if action.name == "hide")
    hide.post(client, alpha, beta)
    assert hide.done(alpha) and hide.done(beta)


def test_the_delete_button_and_page_follow_the_role_in_the_threads_project(
    staff: Team, alpha: Records, beta: Records
) -> None:
    change = reverse("admin:transcripts_thread_change", args=[alpha.thread.pk])
    delete = reverse("admin:transcripts_thread_delete", args=[alpha.thread.pk])
    assert delete in staff.client(staff.owner).get(change).content.decode()
    assert delete not in staff.client(staff.moderator).get(change).content.decode()
    assert staff.client(staff.moderator).get(delete).status_code == 403
    assert staff.client(staff.viewer).get(delete).status_code == 403
    assert staff.client(staff.outsider).get(delete).status_code == 404
    gone = staff.client(staff.outsider).post(delete, CONFIRMED)
    assert gone.status_code == 404 and Thread.objects.filter(pk=alpha.thread.pk).exists()
    done = staff.client(staff.owner).post(delete, CONFIRMED)
    assert done.status_code == 302 and not Thread.objects.filter(pk=alpha.thread.pk).exists()
    assert AuditRecord.objects.get(action="delete", target_id=alpha.thread.pk).actor == staff.owner
