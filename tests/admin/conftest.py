"""The team of `tests/base.py` made staff (the admin lets only staff in), and records of
every kind in both projects, so each test can ask who sees which."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib.auth.models import User

from tests.base import Team, make_user
from tests.factories import ask, events, make_thread, say
from transcripts import ledger
from transcripts.admin.events import event_key
from transcripts.ledger import moderation
from transcripts.ledger.audit import record_audit
from transcripts.ledger.projects import set_member
from transcripts.ledger.tokens import issue_token
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


def conversation_in(project: Project, *, turns: int = 1, title: str = "Conversation") -> Thread:
    """A linear thread of user/assistant turns in project."""
    thread = make_thread(title, project=project)
    for turn in range(turns):
        ask(thread, f"question {turn}")
        say(thread, f"answer {turn}")
    thread.refresh_from_db()
    return thread


@dataclass
class Records:
    """One record of each kind the admin shows, in one project (membership: a viewer's, added
    for it, since the project's last admin cannot be removed)."""

    project: Project
    thread: Thread
    run: Run
    failed_run: Run
    message: Message
    event: Event
    report: Report
    auditrecord: AuditRecord
    apitoken: ApiToken
    membership: Membership

    def pk(self, model: str) -> object:
        """The id of the record of model (a model name as in admin URLs)."""
        if model == "project":
            return self.project.pk
        if model == "event":
            return event_key(self.event)
        return getattr(self, model).pk


def records_in(project: Project, reporter: User) -> Records:
    """A conversation in project, reported by reporter, with an audit record and a token."""
    thread = conversation_in(project, title=f"{project.slug} thread")
    message = Message.objects.filter(thread=thread, role="assistant").get()
    report = moderation.report_message(user=reporter, message=message, reason="spam")
    token, _ = issue_token(name=f"{project.slug} agent", scopes=["ingest"], project=project)
    failed, _ = ledger.begin_run(thread=thread)
    ledger.append_events(run=failed, events=events(("text-delta", {"delta": "a secret"})))
    ledger.fail_run(run=failed, error="boom")
    return Records(
        project=project,
        thread=thread,
        run=Run.objects.get(pk=message.run_id),
        failed_run=failed,
        message=message,
        event=Event.objects.filter(run_id=message.run_id).order_by("seq")[0],
        report=report,
        auditrecord=record_audit(reporter, "test", thread, thread_id=thread.id),
        apitoken=token,
        membership=set_member(
            project=project, user=make_user(f"{project.slug}-reader"), role="viewer"
        ),
    )


@pytest.fixture(autouse=True)
def fast_passwords(settings: Any) -> None:
    """A fast hasher: the team's eight accounts otherwise take seconds to create per test."""
    settings.PASSWORD_HASHERS = [
        "django.contrib.auth.hashers.MD5PasswordHasher",
        # Still verifies the shared PBKDF2 hash of tests.base.
        "django.contrib.auth.hashers.PBKDF2PasswordHasher",
    ]


@pytest.fixture
def staff(team: Team) -> Team:
    """The team with every member made staff: what each then sees is up to their roles."""
    people = (team.owner, team.moderator, team.editor, team.viewer, team.outsider, team.stranger)
    User.objects.filter(pk__in=[person.pk for person in people]).update(is_staff=True)
    for person in people:
        person.is_staff = True
    return team


@pytest.fixture
def alpha(staff: Team) -> Records:
    """Records in project alpha (reported by its viewer)."""
    return records_in(staff.alpha, staff.viewer)


@pytest.fixture
def beta(staff: Team) -> Records:
    """Records in project beta (reported by the outsider, its admin)."""
    return records_in(staff.beta, staff.outsider)
