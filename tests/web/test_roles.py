"""Every page and action asked the three questions, in two projects holding threads.

For each view and action: an outsider of the thread's project (a member of another project, or
of none) gets 404 and changes nothing; a member whose role is one step too low gets 403 naming
the role needed and changes nothing; the right role acts. Then the same in project beta: its
admin acts, alpha's admin finds nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest
from django.contrib.auth.models import User

from tests.base import Team, make_user
from tests.factories import ask, last_message, make_run, make_thread, say
from transcripts import ledger
from transcripts.ledger import moderation, scores
from transcripts.ledger.projects import set_member
from transcripts.ledger.scores import Author, ConfigSpec
from transcripts.ledger.tokens import issue_token
from transcripts.models import (
    ApiToken,
    AuditRecord,
    Feedback,
    Membership,
    Message,
    Profile,
    Project,
    Report,
    Run,
    RunOrigin,
    Score,
    ScoreConfig,
    Thread,
    ThreadPin,
)
from transcripts.permissions import Role

if TYPE_CHECKING:
    from django.test.client import _MonkeyPatchedWSGIResponse

pytestmark = pytest.mark.django_db

HTMX = {"HX-Request": "true"}
OPTIONS = {"generator": "demo", "model": ""}


@dataclass
class Place:
    """What one project holds for the table: a branched thread with runs in every state, a
    report, a member to change, a token to revoke."""

    project: Project
    thread: Thread
    prompt: Message
    answer: Message
    superseded: Run
    active: Run
    web_run: Run  # open, started in the browser
    api_run: Run  # open, an agent's
    failed: Run
    report: Report
    member: User
    token: ApiToken
    config: ScoreConfig


def build(project: Project, *, reporter: User, member: User) -> Place:
    """A place in project; reporter (a member) has reported its answer."""
    thread = make_thread(f"Thread of {project.slug}", project=project)
    prompt = last_message(ask(thread, f"question in {project.slug}"))
    superseded = say(thread, f"first answer in {project.slug}", fork_from=prompt.id)
    active = say(thread, f"second answer in {project.slug}", fork_from=prompt.id)
    superseded.refresh_from_db()
    answer = last_message(active)
    typing = ("text-delta", {"delta": "typing"})
    web_run = make_run(thread, typing, fork_from=prompt.id, commit=False, origin=RunOrigin.WEB)
    api_run = make_run(thread, typing, fork_from=prompt.id, commit=False)
    failed, _ = ledger.begin_run(
        thread=thread, fork_from=prompt.id, generator="demo", origin=RunOrigin.WEB
    )
    failed = ledger.fail_run(run=failed, error="boom")
    config = scores.create_score_config(
        project=project, author=Author(), spec=ConfigSpec("correct", "boolean")
    )
    report = moderation.report_message(user=reporter, message=answer, reason="spam")
    token, _ = issue_token(name=f"agent of {project.slug}", scopes=["ingest"], project=project)
    thread.refresh_from_db()
    return Place(
        project, thread, prompt, answer, superseded, active, web_run, api_run, failed, report,
        member, token, config,
    )  # fmt: skip


@dataclass(frozen=True)
class Case:
    """One view or action: how to call it on a place, the role it needs, what success answers."""

    name: str
    method: str
    path: Callable[[Place], str]
    role: Role
    ok: int
    data: Callable[[Place], dict[str, Any]] = lambda p: {}
    htmx: bool = False


READS = [
    Case("conversation", "get", lambda p: f"/t/{p.thread.id}/", Role.VIEWER, 200),
    Case("conversation at a leaf", "get",
         lambda p: f"/t/{p.thread.id}/?leaf={last_message(p.superseded).id}", Role.VIEWER, 200,
         htmx=True),
    Case("earlier messages", "get", lambda p: f"/t/{p.thread.id}/?dir=before&from={p.answer.id}",
         Role.VIEWER, 200, htmx=True),
    Case("later messages", "get", lambda p: f"/t/{p.thread.id}/?dir=after&from={p.prompt.id}",
         Role.VIEWER, 200, htmx=True),
    Case("tree", "get", lambda p: f"/t/{p.thread.id}/tree/", Role.VIEWER, 200),
    Case("tree fragment", "get", lambda p: f"/t/{p.thread.id}/tree/", Role.VIEWER, 200,
         htmx=True),
    Case("run page", "get", lambda p: f"/runs/{p.active.id}/", Role.VIEWER, 200),
    Case("run events page", "get", lambda p: f"/runs/{p.active.id}/?after=1", Role.VIEWER, 200,
         htmx=True),
    Case("live block", "get", lambda p: f"/runs/{p.web_run.id}/live/", Role.VIEWER, 200,
         htmx=True),
    Case("compare fork", "get", lambda p: f"/t/{p.thread.id}/fork/{p.prompt.id}/compare/",
         Role.VIEWER, 200),
    Case("compare pair", "get", lambda p: f"/compare/?a={p.active.id}&b={p.superseded.id}",
         Role.VIEWER, 200),
    Case("report form", "get", lambda p: f"/t/{p.thread.id}/m/{p.answer.id}/report/",
         Role.VIEWER, 200),
    Case("project page", "get", lambda p: f"/p/{p.project.slug}/", Role.VIEWER, 200),
    Case("dashboard", "get", lambda p: f"/p/{p.project.slug}/dashboard/", Role.VIEWER, 200),
    Case("scores page", "get", lambda p: f"/p/{p.project.slug}/scores/", Role.VIEWER, 200),
]  # fmt: skip

WRITES = [
    Case("report", "post", lambda p: f"/t/{p.thread.id}/m/{p.answer.id}/report/", Role.VIEWER,
         303, data=lambda p: {"reason": "incorrect"}),
    Case("feedback", "post", lambda p: f"/t/{p.thread.id}/m/{p.answer.id}/feedback/",
         Role.VIEWER, 303, data=lambda p: {"rating": "up"}),
    Case("feedback with htmx", "post", lambda p: f"/t/{p.thread.id}/m/{p.answer.id}/feedback/",
         Role.VIEWER, 200, data=lambda p: {"rating": "down", "comment": "vague"}, htmx=True),
    Case("score an answer", "post", lambda p: f"/t/{p.thread.id}/m/{p.answer.id}/score/",
         Role.EDITOR, 303, data=lambda p: {"config": str(p.config.pk), "value": "yes"}),
    Case("score an answer with htmx", "post",
         lambda p: f"/t/{p.thread.id}/m/{p.answer.id}/score/", Role.EDITOR, 200,
         data=lambda p: {"config": str(p.config.pk), "value": "no"}, htmx=True),
    Case("score a thread", "post", lambda p: f"/t/{p.thread.id}/score/", Role.EDITOR, 303,
         data=lambda p: {"config": str(p.config.pk), "value": "yes"}),
    Case("add score config", "post", lambda p: f"/p/{p.project.slug}/scores/", Role.ADMIN, 303,
         data=lambda p: {"name": "helpfulness", "data_type": "numeric", "min_value": "1",
                         "max_value": "5", "writers": "both"}),
    Case("archive score config", "post",
         lambda p: f"/p/{p.project.slug}/scores/{p.config.pk}/archive/", Role.ADMIN, 303),
    Case("require score configs", "post", lambda p: f"/p/{p.project.slug}/scores/required/",
         Role.ADMIN, 303, data=lambda p: {"required": "on"}),
    Case("switch", "post", lambda p: "/projects/switch/", Role.VIEWER, 303,
         data=lambda p: {"project": p.project.slug}),
    Case("regenerate", "post", lambda p: f"/t/{p.thread.id}/m/{p.answer.id}/regenerate/",
         Role.EDITOR, 302, data=lambda p: OPTIONS),
    Case("edit", "post", lambda p: f"/t/{p.thread.id}/m/{p.prompt.id}/edit/", Role.EDITOR, 302,
         data=lambda p: {**OPTIONS, "text": "edited"}),
    Case("reply", "post", lambda p: f"/t/{p.thread.id}/reply/", Role.EDITOR, 302,
         data=lambda p: {**OPTIONS, "text": "more"}),
    Case("stop a browser run", "post", lambda p: f"/runs/{p.web_run.id}/cancel/", Role.EDITOR,
         302),
    Case("stop an agent's run", "post", lambda p: f"/runs/{p.api_run.id}/cancel/", Role.ADMIN,
         302),
    Case("new thread from here", "post", lambda p: f"/t/{p.thread.id}/m/{p.answer.id}/fork/",
         Role.EDITOR, 302),
    Case("retry", "post", lambda p: f"/runs/{p.failed.id}/retry/", Role.EDITOR, 302),
    Case("restore", "post", lambda p: f"/runs/{p.superseded.id}/restore/", Role.EDITOR, 303),
    Case("rate", "post", lambda p: f"/runs/{p.superseded.id}/rate/", Role.EDITOR, 303,
         data=lambda p: {"preferred": "on"}),
    Case("rate with htmx", "post", lambda p: f"/runs/{p.superseded.id}/rate/", Role.EDITOR, 303,
         data=lambda p: {"preferred": "on"}, htmx=True),
    Case("close report", "post", lambda p: f"/moderation/reports/{p.report.pk}/close/",
         Role.MODERATOR, 303, data=lambda p: {"status": "resolved"}),
    Case("close report with htmx", "post",
         lambda p: f"/moderation/reports/{p.report.pk}/close/", Role.MODERATOR, 200,
         data=lambda p: {"status": "dismissed"}, htmx=True),
    Case("audit log", "get", lambda p: f"/p/{p.project.slug}/audit/", Role.MODERATOR, 200),
    Case("add member", "post", lambda p: f"/p/{p.project.slug}/members/", Role.ADMIN, 303,
         data=lambda p: {"username": "newcomer", "role": "viewer"}),
    Case("change role", "post",
         lambda p: f"/p/{p.project.slug}/members/{p.member.pk}/role/", Role.ADMIN, 303,
         data=lambda p: {"role": "editor"}),
    Case("remove member", "post",
         lambda p: f"/p/{p.project.slug}/members/{p.member.pk}/remove/", Role.ADMIN, 303),
    Case("create token", "post", lambda p: f"/p/{p.project.slug}/tokens/", Role.ADMIN, 201,
         data=lambda p: {"name": "new agent", "scopes": ["ingest", "read"]}),
    Case("revoke token", "post",
         lambda p: f"/p/{p.project.slug}/tokens/{p.token.pk}/revoke/", Role.ADMIN, 303),
    Case("retention", "post", lambda p: f"/p/{p.project.slug}/retention/", Role.ADMIN, 303,
         data=lambda p: {"days": "30"}),
    Case("rename", "post", lambda p: f"/t/{p.thread.id}/rename/", Role.EDITOR, 302,
         data=lambda p: {"title": "Renamed"}),
    Case("archive", "post", lambda p: f"/t/{p.thread.id}/archive/", Role.EDITOR, 302,
         data=lambda p: {"archived": "yes"}),
    Case("tag", "post", lambda p: f"/t/{p.thread.id}/tags/", Role.EDITOR, 302,
         data=lambda p: {"add": "eval"}),
    Case("pin", "post", lambda p: f"/t/{p.thread.id}/pin/", Role.VIEWER, 302,
         data=lambda p: {"pinned": "yes"}),
    Case("delete page", "get", lambda p: f"/t/{p.thread.id}/delete/", Role.ADMIN, 200),
    Case("delete", "post", lambda p: f"/t/{p.thread.id}/delete/", Role.ADMIN, 302),
    Case("bulk archive", "post", lambda p: "/threads/bulk/", Role.EDITOR, 302,
         data=lambda p: {"ids": [p.thread.id], "action": "archive"}),
    Case("bulk delete", "post", lambda p: "/threads/bulk/", Role.ADMIN, 302,
         data=lambda p: {"ids": [p.thread.id], "action": "delete", "confirm": "on"}),
]  # fmt: skip

CASES = READS + WRITES


def state() -> tuple[Any, ...]:
    """Everything a refused request must leave as it was."""
    return (
        sorted(Run.objects.values_list("id", "status")),
        sorted(Report.objects.values_list("id", "status")),
        sorted(Membership.objects.values_list("project_id", "user_id", "role")),
        sorted(ApiToken.objects.values_list("id", "revoked_at")),
        sorted(Project.objects.values_list("id", "retention_days")),
        sorted(Profile.objects.values_list("user_id", "current_project_id")),
        Report.objects.count(),
        list(Run.objects.values_list("id", flat=True).filter(ratings__isnull=False)),
        sorted(Thread.objects.values_list("id", "title", "archived", "metadata")),
        sorted(ThreadPin.objects.values_list("user_id", "thread_id")),
        sorted(Feedback.objects.values_list("user_id", "message_id", "up", "comment")),
        sorted(ScoreConfig.objects.values_list("project_id", "name", "archived_at")),
        sorted(Score.objects.values_list("id", "name", "value", "label", "comment")),
        sorted(Project.objects.values_list("id", "settings")),
    )


def call(team: Team, user: User, case: Case, place: Place) -> _MonkeyPatchedWSGIResponse:
    """The answer to user calling case on place."""
    client = team.client(user)
    headers = HTMX if case.htmx else {}
    send = client.get if case.method == "get" else client.post
    return send(case.path(place), case.data(place), headers=headers)


@pytest.fixture
def places(team: Team) -> tuple[Place, Place]:
    """A place in alpha (its viewer reported) and one in beta (its admin, `outsider`, did)."""
    make_user("newcomer")
    beta_member = make_user("beta-viewer")
    set_member(project=team.beta, user=beta_member, role="viewer")
    alpha = build(team.alpha, reporter=team.viewer, member=team.viewer)
    beta = build(team.beta, reporter=team.outsider, member=beta_member)
    return alpha, beta


def member_with(team: Team, role: Role) -> User:
    """alpha's member holding role."""
    return {
        Role.VIEWER: team.viewer,
        Role.EDITOR: team.editor,
        Role.MODERATOR: team.moderator,
        Role.ADMIN: team.owner,
    }[role]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_outsiders_get_404_lower_roles_403_and_the_right_role_acts(
    team: Team, places: tuple[Place, Place], case: Case
) -> None:
    alpha, beta = places
    before = state()
    # beta's admin and someone in no project: alpha's things do not exist for them.
    for outsider in (team.outsider, team.stranger):
        assert call(team, outsider, case, alpha).status_code == 404, outsider
    assert state() == before
    if case.role > Role.VIEWER:
        lower = Role(case.role - 1)
        refused = call(team, member_with(team, lower), case, alpha)
        assert refused.status_code == 403
        text = refused.content.decode()
        assert f"{case.role.label} role" in text and lower.label in text, text
        assert state() == before
    acted = call(team, member_with(team, case.role), case, alpha)
    assert acted.status_code == case.ok, acted.content.decode()[:2000]
    if case.method == "post":
        assert state() != before
    # In beta the roles are the other way round: its admin acts, alpha's admin finds nothing.
    before = state()
    assert call(team, team.owner, case, beta).status_code == 404
    assert state() == before
    assert call(team, team.outsider, case, beta).status_code == case.ok


def test_a_superuser_acts_in_every_project(team: Team, places: tuple[Place, Place]) -> None:
    chosen = [c for c in CASES if c.name in ("conversation", "stop an agent's run", "retention")]
    for place in places:
        for case in chosen:
            assert call(team, team.superuser, case, place).status_code == case.ok, case.name


def test_stopping_an_agents_run_is_refused_to_an_editor_while_a_browser_run_stops(
    team: Team, places: tuple[Place, Place]
) -> None:
    alpha, _ = places
    editor = team.client(team.editor)
    refused = editor.post(f"/runs/{alpha.api_run.id}/cancel/", headers=HTMX)
    assert refused.status_code == 403 and refused["X-Refusal"] == "1"
    assert b"started by an agent through the API" in refused.content
    alpha.api_run.refresh_from_db()
    assert alpha.api_run.is_open
    assert editor.post(f"/runs/{alpha.web_run.id}/cancel/", headers=HTMX).status_code == 200
    alpha.web_run.refresh_from_db()
    # Stop keeps what the browser's run streamed, as a branch marked stopped.
    assert alpha.web_run.status == "committed" and alpha.web_run.metadata == {"stopped": True}
    # The page offers Stop only where it works: on the browser's run, not on the agent's.
    live = editor.get(f"/runs/{alpha.api_run.id}/live/", headers=HTMX).content.decode()
    assert "/cancel/" not in live
    owner_live = team.client(team.owner).get(f"/runs/{alpha.api_run.id}/live/", headers=HTMX)
    assert f"/runs/{alpha.api_run.id}/cancel/" in owner_live.content.decode()


def test_a_viewer_is_offered_no_action_their_role_may_not_take(
    team: Team, places: tuple[Place, Place]
) -> None:
    alpha, _ = places
    viewer = team.client(team.viewer)
    html = viewer.get(f"/t/{alpha.thread.id}/?leaf={last_message(alpha.superseded).id}")
    text = html.content.decode()
    for action in ("/regenerate/", "/edit/", "/restore/", "/cancel/", 'id="reply"'):
        assert action not in text, action
    assert "/report/" in text  # a viewer may report
    compare = viewer.get(f"/t/{alpha.thread.id}/fork/{alpha.prompt.id}/compare/")
    assert "/restore/" not in compare.content.decode() and "/rate/" not in compare.content.decode()
    live = viewer.get(f"/runs/{alpha.failed.id}/live/", headers=HTMX).content.decode()
    assert "/retry/" not in live
    editor_compare = team.client(team.editor).get(
        f"/t/{alpha.thread.id}/fork/{alpha.prompt.id}/compare/"
    )
    assert "/restore/" in editor_compare.content.decode()
    assert "/rate/" in editor_compare.content.decode()


def test_the_queue_shows_only_reports_of_projects_the_user_moderates(
    team: Team, places: tuple[Place, Place]
) -> None:
    alpha, beta = places
    moderator = team.client(team.moderator).get("/moderation/?status=all").content.decode()
    assert f'id="report-{alpha.report.pk}"' in moderator
    assert f'id="report-{beta.report.pk}"' not in moderator
    assert 'Open <span class="count">1</span>' in moderator
    beta_admin = team.client(team.outsider).get("/moderation/").content.decode()
    assert f'id="report-{beta.report.pk}"' in beta_admin
    assert f'id="report-{alpha.report.pk}"' not in beta_admin
    both = team.client(team.superuser).get("/moderation/").content.decode()
    assert f'id="report-{alpha.report.pk}"' in both and f'id="report-{beta.report.pk}"' in both
    assert 'Open <span class="count">2</span>' in both
    # A member below moderator anywhere has no queue at all.
    for user in (team.editor, team.viewer, team.stranger):
        response = team.client(user).get("/moderation/")
        assert response.status_code == 403 and b"moderator role" in response.content


def test_the_audit_log_is_the_projects_own_newest_first_and_paged(
    team: Team, places: tuple[Place, Place]
) -> None:
    alpha, beta = places
    owner = team.client(team.owner)
    owner.post("/p/alpha/retention/", {"days": "7"})
    owner.post(f"/p/alpha/members/{alpha.member.pk}/role/", {"role": "editor"})
    page = team.client(team.moderator).get("/p/alpha/audit/").content.decode()
    actions = [line.strip()[4:-5] for line in page.splitlines() if "<td>" in line][2::5]
    assert actions[:3] == ["change_role", "set_retention", "report"], actions
    assert alpha.answer.id in page and beta.answer.id not in page  # beta's report is beta's
    for n in range(60):
        AuditRecord.objects.create(action=f"bulk-{n:02d}", target_type="x", target_id="1",
                                   project=team.alpha)  # fmt: skip
    first = team.client(team.moderator).get("/p/alpha/audit/").content.decode()
    assert "bulk-59" in first and "bulk-00" not in first and "Older entries" in first
    cursor = first.split("?cursor=")[1].split('"')[0]
    older = team.client(team.moderator).get(f"/p/alpha/audit/?cursor={cursor}", headers=HTMX)
    text = older.content.decode()
    assert "<html" not in text and "bulk-00" in text and "bulk-59" not in text
    assert "set_retention" in text and "Older entries" not in text
    assert team.client(team.moderator).get("/p/alpha/audit/?cursor=nonsense").status_code == 400
