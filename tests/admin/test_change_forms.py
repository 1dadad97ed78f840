"""Change pages are view-only: a posted change form writes nothing, for anyone."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.admin.models import LogEntry
from django.urls import reverse

from tests.admin.conftest import conversation_in
from tests.base import Team
from transcripts.admin.events import event_key
from transcripts.models import AuditRecord, Event, Message, Report, Run, Thread

pytestmark = pytest.mark.django_db
# Alpha's moderator and owner, and the superuser: everyone who sees alpha's records here.
WHO = ("moderator", "owner", "superuser")


def _row(model: type[Any], pk: object) -> dict[str, Any]:
    return model.objects.filter(pk=pk).values().get()


def _targets(team: Team) -> dict[str, tuple[type[Any], Any, dict[str, Any]]]:
    """Per model: an object of alpha and a change form that would alter it, were it saved."""
    thread = conversation_in(team.alpha, title="Original title")
    message = Message.objects.filter(thread=thread, role="assistant").get()
    report = Report.objects.create(
        message=message, thread=thread, reporter=team.viewer, reason="spam"
    )
    return {
        "thread": (
            Thread,
            thread,
            {"title": "Renamed", "hidden": "on", "locked": "on", "head": "", "metadata": "{}"},
        ),
        "message": (
            Message,
            message,
            {"parts": '[{"type": "text", "text": "rewritten"}]', "role": "user", "active": ""},
        ),
        "report": (
            Report,
            report,
            {"status": "resolved", "resolution_note": "by hand", "note": "changed"},
        ),
    }


@pytest.mark.parametrize("who", WHO)
@pytest.mark.parametrize("model", ["thread", "message", "report"])
def test_posting_a_change_form_is_refused_and_changes_nothing(staff: Team, who: str, model: str):
    client = staff.client(getattr(staff, who))
    model_class, obj, form = _targets(staff)[model]
    before = _row(model_class, obj.pk)
    url = reverse(f"admin:transcripts_{model}_change", args=[obj.pk])
    response = client.post(url, {**form, "_save": "Save"})
    assert response.status_code == 403
    assert _row(model_class, obj.pk) == before
    assert not AuditRecord.objects.exists()
    assert not LogEntry.objects.exists()


@pytest.mark.parametrize("who", WHO)
def test_change_pages_show_every_record_without_a_save_button(staff: Team, who: str):
    client = staff.client(getattr(staff, who))
    targets = _targets(staff)
    thread = targets["thread"][1]
    run = Run.objects.filter(thread=thread).first()
    event = Event.objects.filter(thread=thread).first()
    record = AuditRecord.objects.create(
        action="test", target_type="thread", target_id=thread.id, project=staff.alpha
    )
    pages = {
        **{model: obj.pk for model, (_, obj, _form) in targets.items()},
        "run": run.pk if run else None,
        "event": event_key(event) if event else None,
        "auditrecord": record.pk,
    }
    for model, pk in pages.items():
        page = client.get(reverse(f"admin:transcripts_{model}_change", args=[pk]))
        assert page.status_code == 200, model
        content = page.content.decode()
        assert 'name="_save"' not in content and 'name="_continue"' not in content, model
    title = client.get(reverse("admin:transcripts_thread_change", args=[thread.pk]))
    assert 'name="title"' not in title.content.decode()  # shown, not an input


def test_a_thread_page_names_its_project(staff: Team) -> None:
    thread = conversation_in(staff.alpha)
    page = staff.client(staff.moderator).get(
        reverse("admin:transcripts_thread_change", args=[thread.pk])
    )
    assert "Alpha" in page.content.decode()
