"""The admin site: a subclass of Django's (no monkeypatching), moderation counts on its index."""

from __future__ import annotations

import pytest
from django.apps import apps
from django.contrib import admin
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from tests.admin.conftest import conversation_in
from tests.base import Team
from tests.factories import ask
from transcripts.admin.site import TranscriptsAdminSite
from transcripts.apps import TranscriptsAdminConfig, TranscriptsConfig
from transcripts.ledger import moderation
from transcripts.models import (
    ApiToken,
    AuditRecord,
    Event,
    Membership,
    Message,
    Project,
    Report,
    Run,
    Thread,
)

pytestmark = pytest.mark.django_db
MODELS = (Thread, Run, Message, Event, Report, AuditRecord, ApiToken, Project, Membership)


def test_the_default_admin_site_is_the_transcripts_site():
    assert isinstance(admin.site, TranscriptsAdminSite)
    assert "index" not in vars(admin.site._wrapped)  # type: ignore[attr-defined]
    assert {model for model in MODELS if admin.site.is_registered(model)} == set(MODELS)
    assert admin.site.is_registered(User)
    assert type(apps.get_app_config("transcripts")) is TranscriptsConfig
    assert type(apps.get_app_config("admin")) is TranscriptsAdminConfig


def test_the_index_and_every_changelist_render_with_the_auth_admins(staff: Team):
    superuser_client = staff.client(staff.superuser)
    conversation_in(staff.alpha)
    index = superuser_client.get(reverse("admin:index"))
    assert index.status_code == 200
    content = index.content.decode()
    assert "Transcripts administration" in content
    assert reverse("admin:auth_user_changelist") in content
    assert reverse("admin:auth_group_changelist") in content
    names = [f"transcripts_{model._meta.model_name}" for model in MODELS]
    for name in [*names, "auth_user", "auth_group"]:
        assert superuser_client.get(reverse(f"admin:{name}_changelist")).status_code == 200, name


def test_the_index_shows_the_moderation_counts(staff: Team):
    moderator, viewer = staff.moderator, staff.viewer
    moderator_client = staff.client(moderator)
    thread = conversation_in(staff.alpha, turns=2)
    ask(thread, "bad question")
    message = Message.objects.filter(thread=thread).last()
    assert message is not None
    Report.objects.create(message=message, thread=thread, reporter=viewer, reason="spam")
    Report.objects.create(
        message=message, thread=thread, reporter=viewer, reason="spam", status="dismissed"
    )
    moderation.flag_message(user=moderator, message=message, reason="rude")
    moderation.hide_thread(user=moderator, thread=conversation_in(staff.alpha, title="other"))
    response = moderator_client.get(reverse("admin:index"))
    assert b"Open reports" in response.content
    counts = {
        k: response.context[k] for k in ("open_reports", "flagged_messages", "hidden_threads")
    }
    assert counts == {"open_reports": 1, "flagged_messages": 1, "hidden_threads": 1}
    moderation.close_report(
        user=moderator, report=Report.objects.get(status="open"), status="resolved"
    )
    assert moderator_client.get(reverse("admin:index")).context["open_reports"] == 0


def test_a_viewer_cannot_open_the_admin(client: Client, team: Team):
    client.force_login(team.viewer)
    response = client.get(reverse("admin:transcripts_thread_changelist"))
    assert response.status_code == 302


def test_a_staff_viewer_sees_no_model_and_no_counts(staff: Team):
    index = staff.client(staff.viewer).get(reverse("admin:index"))
    assert index.status_code == 200 and index.context["app_list"] == []
    assert "open_reports" not in index.context
    response = staff.client(staff.viewer).get(reverse("admin:transcripts_thread_changelist"))
    assert response.status_code == 403
