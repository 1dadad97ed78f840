"""The table of moderation actions: each entry performs its action through its ledger function,
on its target, with the audit verb, role and words the table gives."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.db.models import DateTimeField, Model
from django.utils import timezone

from tests.factories import conversation, make_run
from transcripts import ledger
from transcripts.errors import PermissionDenied
from transcripts.ledger import moderation
from transcripts.ledger.moderation_actions import ModerationAction
from transcripts.models import AuditRecord, Message
from transcripts.permissions import Role

pytestmark = pytest.mark.django_db


def _target(action: ModerationAction, viewer: User) -> Model:
    """A fresh object of action's kind, in the state in which the queue offers action."""
    thread = conversation(turns=1)
    message = Message.objects.filter(thread=thread, role="assistant").get()
    if action.target == "run":
        run = make_run(thread, ("text-delta", {"delta": "a secret"}), commit=False)
        return ledger.fail_run(run=run, error="boom")
    if action.target == "report":
        return moderation.report_message(user=viewer, message=message, reason="spam")
    target: Model = thread if action.target == "thread" else message
    if action.offered_when is not None:
        field, is_set = action.offered_when
        stamped = isinstance(target._meta.get_field(field), DateTimeField)
        value = (timezone.now() if stamped else True) if is_set else (None if stamped else False)
        type(target)._default_manager.filter(pk=target.pk).update(**{field: value})
        target.refresh_from_db()
    return target


@pytest.mark.parametrize("name", list(moderation.ACTIONS))
def test_each_action_performs_with_its_audit_verb_on_its_target(
    name: str, viewer: User, moderator: User, admin_user: User
) -> None:
    action = moderation.ACTIONS[name]
    target = _target(action, viewer)
    if action.role == Role.ADMIN:
        with pytest.raises(PermissionDenied):
            action.run(user=moderator, target=target, reason="not mine")
    before = AuditRecord.objects.count()
    assert action.run(user=admin_user, target=target, reason="the reason") is True
    record = AuditRecord.objects.order_by("id").last()
    assert record is not None and AuditRecord.objects.count() == before + 1
    assert (record.action, record.target_type) == (action.audit, action.target)
    assert record.reason == "the reason"


def test_actions_taken_from_reports_are_the_table_s_and_unknown_ones_are_refused() -> None:
    names = [action.name for action in moderation.report_actions()]
    assert names == ["hide", "unhide", "lock", "unlock", "flag", "unflag", "redact"]
    assert all(action.target in ("thread", "message") for action in moderation.report_actions())
    assert moderation.action_words("hide").done == "Hid"
    assert moderation.action_words("revoke_share").state == "revoked"
