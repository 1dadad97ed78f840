"""What the admin's actions say: "Hid 3 threads", "already hidden" for actions that change
nothing (and write nothing), the text a redaction erases before it is confirmed, and the audit
log's threads by title."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.messages import get_messages
from django.test import Client
from django.urls import reverse

from tests.admin.conftest import Records, conversation_in
from tests.base import Team
from transcripts.ledger import moderation
from transcripts.models import AuditRecord, Message, Thread

pytestmark = pytest.mark.django_db


def _post(client: Client, model: str, action: str, ids: list[Any], **form: Any) -> Any:
    return client.post(
        reverse(f"admin:transcripts_{model}_changelist"),
        {"action": action, "_selected_action": ids, **form},
        follow=True,
    )


def _notes(response: Any) -> list[tuple[str, str]]:
    return [(m.level_tag, str(m)) for m in get_messages(response.wsgi_request)]


@pytest.mark.parametrize(
    ("action", "said"),
    [
        ("hide", "Hid 3 threads."),
        ("lock", "Locked 3 threads."),
    ],
)
def test_thread_actions_say_what_they_did_in_plain_words(
    staff: Team, action: str, said: str
) -> None:
    threads = [conversation_in(staff.alpha, title=f"t{n}") for n in range(3)]
    client = staff.client(staff.moderator)
    response = _post(client, "thread", action, [t.pk for t in threads], reason="spam")
    assert ("success", said) in _notes(response)
    assert "object(s)" not in response.content.decode() and "Hided" not in said


def test_one_thread_is_singular_and_unhiding_says_unhid(staff: Team) -> None:
    thread = conversation_in(staff.alpha)
    moderation.hide_thread(user=staff.moderator, thread=thread)
    response = _post(staff.client(staff.moderator), "thread", "unhide", [thread.pk])
    assert ("success", "Unhid 1 thread.") in _notes(response)


def test_an_action_that_changes_nothing_says_already_and_writes_nothing(staff: Team) -> None:
    hidden = [conversation_in(staff.alpha, title=f"h{n}") for n in range(2)]
    visible = conversation_in(staff.alpha, title="visible")
    for thread in hidden:
        moderation.hide_thread(user=staff.moderator, thread=thread, reason="spam")
    locked = conversation_in(staff.alpha, title="locked")
    moderation.lock_thread(user=staff.moderator, thread=locked)
    records = AuditRecord.objects.count()
    client = staff.client(staff.moderator)
    response = _post(client, "thread", "hide", [t.pk for t in [*hidden, visible]], reason="x")
    assert _notes(response) == [
        ("success", "Hid 1 thread."),
        ("info", "2 threads were already hidden: nothing changed."),
    ]
    assert AuditRecord.objects.count() == records + 1
    response = _post(client, "thread", "lock", [locked.pk], reason="x")
    assert _notes(response) == [("info", "1 thread was already locked: nothing changed.")]
    assert AuditRecord.objects.count() == records + 1


def test_flagging_a_flagged_message_says_already_flagged(staff: Team, alpha: Records) -> None:
    moderation.flag_message(user=staff.moderator, message=alpha.message, reason="rude")
    records = AuditRecord.objects.count()
    client = staff.client(staff.moderator)
    response = _post(client, "message", "flag", [alpha.message.pk], reason="again")
    assert _notes(response) == [("info", "1 message was already flagged: nothing changed.")]
    assert AuditRecord.objects.count() == records
    assert Message.objects.get(pk=alpha.message.pk).flag_reason == "rude"


def test_resolving_reports_says_resolved(staff: Team, alpha: Records) -> None:
    response = _post(staff.client(staff.moderator), "report", "resolve", [alpha.report.pk])
    assert ("success", "Resolved 1 report.") in _notes(response)


def test_the_redaction_confirmation_shows_the_text_it_erases(staff: Team, alpha: Records) -> None:
    Message.objects.filter(pk=alpha.message.pk).update(
        parts=[{"type": "text", "text": "<script>x</script> call 555-0100 " + "y" * 4000}]
    )
    client = staff.client(staff.owner)
    page = _post(client, "message", "redact", [alpha.message.pk]).content.decode()
    assert "&lt;script&gt;x&lt;/script&gt; call 555-0100" in page
    assert "<script>x</script>" not in page
    assert "4033 characters in 1 part will be erased (the first 1500 are shown)" in page
    assert "cannot be undone" in page and 'name="confirmed_reason"' in page
    assert "555-0100" in str(Message.objects.get(pk=alpha.message.pk).parts)
    done = _post(
        client,
        "message",
        "redact",
        [alpha.message.pk],
        confirmed="yes",
        confirmed_reason="a phone number",
    )
    assert ("success", "Redacted 1 message.") in _notes(done)
    again = _post(
        client, "message", "redact", [alpha.message.pk], confirmed="yes", confirmed_reason="x"
    )
    assert _notes(again) == [("info", "1 message was already redacted: nothing changed.")]
    assert AuditRecord.objects.filter(action="redact").count() == 1


def test_the_audit_list_names_threads_by_title_with_links(staff: Team, alpha: Records) -> None:
    moderation.hide_thread(user=staff.moderator, thread=alpha.thread, reason="spam " * 60)
    gone = conversation_in(staff.alpha, title="Gone thread")
    moderation.delete_thread(user=staff.owner, thread=gone, reason="asked")
    page = staff.client(staff.owner).get(reverse("admin:transcripts_auditrecord_changelist"))
    content = page.content.decode()
    assert f'<a href="/t/{alpha.thread.id}/">alpha thread</a>' in content
    assert "Gone thread (deleted)" in content
    assert not Thread.objects.filter(title="Gone thread").exists()
    record = AuditRecord.objects.get(action="hide")
    detail = staff.client(staff.owner).get(
        reverse("admin:transcripts_auditrecord_change", args=[record.pk])
    )
    assert f'<a href="/t/{alpha.thread.id}/">alpha thread</a>' in detail.content.decode()
