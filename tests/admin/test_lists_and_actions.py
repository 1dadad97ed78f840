"""The admin lists as moderators use them: no N+1 queries, search, actions with audit."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from tests.admin.conftest import conversation_in
from tests.base import Team, make_user
from tests.factories import events, last_message, make_run
from transcripts import ledger, selectors
from transcripts.ledger.projects import create_project, set_member
from transcripts.ledger.tokens import issue_token
from transcripts.models import AuditRecord, Event, Message, Project, Report, Thread

pytestmark = pytest.mark.django_db
SECRET = "sk-live-leaked-key"


def _threads(project: Project, count: int) -> list[Thread]:
    threads = []
    for index in range(count):
        thread = conversation_in(project, title=f"thread {index}")
        make_run(thread, ("text-delta", {"delta": f"{SECRET} {index}"}))
        threads.append(thread)
    return threads


@pytest.fixture
def moderator_client(staff: Team) -> Client:
    """Alpha's moderator, in the admin."""
    return staff.client(staff.moderator)


@pytest.fixture
def admins_client(staff: Team) -> Client:
    """Alpha's admin (not a superuser), in the admin."""
    return staff.client(staff.owner)


def _same_queries_for_2_and_12(client: Client, model: str, add_rows: Callable[[int], None]) -> None:
    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            response = client.get(reverse(f"admin:transcripts_{model}_changelist"))
        assert response.status_code == 200
        return len(captured)

    add_rows(2)
    few = queries()
    add_rows(10)
    assert queries() == few


@pytest.mark.parametrize("who", ["moderator", "superuser"])
@pytest.mark.parametrize("model", ["thread", "run", "message", "event", "auditrecord", "report"])
def test_every_changelist_uses_the_same_number_of_queries_for_2_and_12_rows(
    staff: Team, who: str, model: str
):
    def add_rows(count: int) -> None:
        for project in (staff.alpha, staff.beta):
            for thread in _threads(project, count):
                message = Message.objects.filter(thread=thread).first()
                Report.objects.create(
                    message=message, thread=thread, reporter=staff.viewer, reason="spam"
                )
                AuditRecord.objects.create(
                    action="test", target_type="thread", target_id=thread.id, project=project
                )

    _same_queries_for_2_and_12(staff.client(getattr(staff, who)), model, add_rows)


@pytest.mark.parametrize("who", ["owner", "superuser"])
@pytest.mark.parametrize("model", ["project", "membership", "apitoken"])
def test_the_project_lists_use_the_same_number_of_queries_for_2_and_12_rows(
    staff: Team, who: str, model: str
):
    def add_rows(count: int) -> None:
        for _ in range(count):
            number = Project.objects.count()
            project = create_project(slug=f"p{number}") if model == "project" else staff.alpha
            person = make_user(f"member{number}-{project.memberships.count()}")
            set_member(project=project, user=person, role="viewer")
            issue_token(name=f"t{number}", scopes=["read"], project=project, user=person)
            if model == "project":
                set_member(project=project, user=staff.owner, role="admin")

    _same_queries_for_2_and_12(staff.client(getattr(staff, who)), model, add_rows)


def test_bulk_hide_writes_one_audit_record_per_thread(staff: Team, moderator_client: Client):
    threads = _threads(staff.alpha, 3)
    response = moderator_client.post(
        reverse("admin:transcripts_thread_changelist"),
        {"action": "hide", "_selected_action": [t.id for t in threads], "reason": "spam wave"},
    )
    assert response.status_code == 302
    assert Thread.objects.filter(hidden=True).count() == 3
    records = AuditRecord.objects.filter(action="hide")
    assert records.count() == 3 and {r.reason for r in records} == {"spam wave"}


def test_redaction_in_the_admin_asks_for_confirmation_and_a_reason(
    staff: Team, admins_client: Client
):
    [thread] = _threads(staff.alpha, 1)
    leaked = Message.objects.get(thread=thread, parts__contains=[{"type": "text"}], depth=2)
    url = reverse("admin:transcripts_message_changelist")
    form = {"action": "redact", "_selected_action": [leaked.id]}
    confirm = admins_client.post(url, form)
    assert confirm.status_code == 200 and b"cannot be undone" in confirm.content
    assert SECRET in str(Message.objects.get(pk=leaked.id).parts)

    no_reason = admins_client.post(url, {**form, "confirmed": "yes", "confirmed_reason": ""})
    assert b"A reason is required" in no_reason.content
    assert Message.objects.get(pk=leaked.id).redacted_at is None

    done = admins_client.post(url, {**form, "confirmed": "yes", "confirmed_reason": "leaked key"})
    assert done.status_code == 302
    assert SECRET not in str(Message.objects.get(pk=leaked.id).parts)
    assert SECRET not in str(list(Event.objects.filter(run=leaked.run).values_list("data")))
    assert AuditRecord.objects.get(action="redact").reason == "leaked key"


def test_a_failed_run_is_redacted_in_the_admin_after_confirmation(
    staff: Team, admins_client: Client
):
    [thread] = _threads(staff.alpha, 1)
    run, _ = ledger.begin_run(thread=thread)
    ledger.append_events(run=run, events=events(("text-delta", {"delta": SECRET})))
    ledger.fail_run(run=run, error="boom")
    url = reverse("admin:transcripts_run_changelist")
    form = {"action": "redact_content", "_selected_action": [run.id]}
    confirm = admins_client.post(url, form)
    assert confirm.status_code == 200 and b"cannot be undone" in confirm.content
    assert SECRET in str(list(Event.objects.filter(run=run).values_list("data")))
    done = admins_client.post(url, {**form, "confirmed": "yes", "confirmed_reason": "pii"})
    assert done.status_code == 302
    assert SECRET not in str(list(Event.objects.filter(run=run).values_list("data")))
    assert AuditRecord.objects.get(action="redact", target_type="run").reason == "pii"


def test_a_moderator_cannot_redact_through_the_admin(staff: Team, moderator_client: Client):
    [thread] = _threads(staff.alpha, 1)
    leaked = Message.objects.get(thread=thread, depth=2)
    moderator_client.post(
        reverse("admin:transcripts_message_changelist"),
        {
            "action": "redact",
            "_selected_action": [leaked.id],
            "confirmed": "yes",
            "confirmed_reason": "x",
        },
    )
    assert Message.objects.get(pk=leaked.id).redacted_at is None
    assert not AuditRecord.objects.filter(action="redact").exists()


def test_message_search_finds_text_on_every_branch(staff: Team, moderator_client: Client):
    thread = conversation_in(staff.alpha)
    prompt = Message.objects.get(thread=thread, depth=0)
    make_run(thread, ("text-delta", {"delta": "an unusual zebra answer"}), fork_from=prompt.id)
    make_run(thread, ("text-delta", {"delta": "a plain answer"}), fork_from=prompt.id)
    response = moderator_client.get(reverse("admin:transcripts_message_changelist"), {"q": "zebra"})
    assert b"unusual zebra" in response.content
    assert b"plain answer" not in response.content


def test_resolving_reports_in_bulk_is_audited(staff: Team, moderator_client: Client):
    [thread] = _threads(staff.alpha, 1)
    message = Message.objects.filter(thread=thread).first()
    reports = [
        Report.objects.create(message=message, thread=thread, reporter=staff.viewer, reason="spam")
        for _ in range(2)
    ]
    moderator_client.post(
        reverse("admin:transcripts_report_changelist"),
        {"action": "resolve", "_selected_action": [r.pk for r in reports], "reason": "ok"},
    )
    assert Report.objects.filter(status="resolved").count() == 2
    assert AuditRecord.objects.filter(action="resolve_report").count() == 2


def test_the_message_list_shows_the_one_preview_without_loading_parts(
    staff: Team, moderator_client: Client
):
    thread = conversation_in(staff.alpha)
    answer = last_message(make_run(thread, ("text-delta", {"delta": "zebra " * 60})))
    response = moderator_client.get(reverse("admin:transcripts_message_changelist"))
    rows = list(response.context["cl"].result_list)
    assert rows and all("parts" in row.get_deferred_fields() for row in rows)
    preview = selectors.message_previews([answer.id], 120)[answer.id]
    assert preview.endswith("\N{HORIZONTAL ELLIPSIS}") and len(preview) <= 121
    assert f'<td class="field-preview">{preview}</td>' in response.content.decode()
