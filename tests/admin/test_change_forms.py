"""Change pages are view-only: a posted change form writes nothing, for anyone."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from tests.factories import conversation
from transcripts.ledger.tokens import issue_token
from transcripts.models import AuditRecord, Event, Message, Project, Report, Run, Thread

pytestmark = pytest.mark.django_db
CLIENTS = ("moderator_client", "admins_client", "superuser_client")


def _row(model: type[Any], pk: object) -> dict[str, Any]:
    return model.objects.filter(pk=pk).values().get()


def _targets(viewer: User) -> dict[str, tuple[type[Any], Any, dict[str, Any]]]:
    """Per model: the object and a change form that would alter it, were it saved."""
    thread = conversation(turns=1, title="Original title")
    message = Message.objects.filter(thread=thread, role="assistant").get()
    report = Report.objects.create(message=message, thread=thread, reporter=viewer, reason="spam")
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


@pytest.mark.parametrize("who", CLIENTS)
@pytest.mark.parametrize("model", ["thread", "message", "report"])
def test_posting_a_change_form_is_refused_and_changes_nothing(
    request: pytest.FixtureRequest, viewer: User, who: str, model: str
):
    client: Client = request.getfixturevalue(who)
    model_class, obj, form = _targets(viewer)[model]
    before = _row(model_class, obj.pk)
    url = reverse(f"admin:transcripts_{model}_change", args=[obj.pk])
    response = client.post(url, {**form, "_save": "Save"})
    assert response.status_code == 403
    assert _row(model_class, obj.pk) == before
    assert not AuditRecord.objects.exists()
    assert not LogEntry.objects.exists()


@pytest.mark.parametrize("who", CLIENTS)
def test_change_pages_show_every_record_without_a_save_button(
    request: pytest.FixtureRequest, viewer: User, who: str
):
    client: Client = request.getfixturevalue(who)
    targets = _targets(viewer)
    thread = targets["thread"][1]
    run = Run.objects.filter(thread=thread).first()
    event = Event.objects.filter(thread=thread).first()
    record = AuditRecord.objects.create(action="test", target_type="thread", target_id=thread.id)
    pages = {
        **{model: obj.pk for model, (_, obj, _form) in targets.items()},
        "run": run.pk if run else None,
        "event": event.pk if event else None,
        "auditrecord": record.pk,
    }
    for model, pk in pages.items():
        page = client.get(reverse(f"admin:transcripts_{model}_change", args=[pk]))
        assert page.status_code == 200, model
        content = page.content.decode()
        assert 'name="_save"' not in content and 'name="_continue"' not in content, model
    title = client.get(reverse("admin:transcripts_thread_change", args=[thread.pk]))
    assert 'name="title"' not in title.content.decode()  # shown, not an input


def test_the_thread_page_keeps_its_delete_button_for_those_who_may_delete(
    admins_client: Client, moderator_client: Client
):
    thread = conversation(turns=1)
    url = reverse("admin:transcripts_thread_change", args=[thread.pk])
    delete = reverse("admin:transcripts_thread_delete", args=[thread.pk])
    assert delete in admins_client.get(url).content.decode()
    assert delete not in moderator_client.get(url).content.decode()


def test_a_stored_token_cannot_be_changed_from_its_page(superuser_client: Client):
    token, _ = issue_token(project=Project.default(), name="ci", scopes=["read"])
    before = _row(type(token), token.pk)
    url = reverse("admin:transcripts_apitoken_change", args=[token.pk])
    page = superuser_client.get(url).content.decode()
    assert 'name="name"' not in page and 'name="scopes"' not in page
    superuser_client.post(url, {"name": "renamed", "scopes": ["ingest"], "_save": "Save"})
    assert _row(type(token), token.pk) == before
