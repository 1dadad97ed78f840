"""Reads only in selectors: every SQL query a page or an API GET runs is issued from a module
allowed to query (selectors, the ledger, the access policy and its adapters, middleware):
never from a view, a presenter, a template tag, an API handler or any other module.

Each query's Python stack is recorded with `connection.execute_wrapper`; its innermost frame
inside `transcripts/` (past the models module, whose managers and lazy relations answer for
their caller) names the module that issued it.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone

import transcripts
from tests.base import make_user
from transcripts import ledger
from transcripts.demo import load_demo
from transcripts.ledger import scores
from transcripts.ledger.default_project import default_project
from transcripts.ledger.projects import set_member
from transcripts.ledger.reports import report_message
from transcripts.ledger.tokens import issue_token
from transcripts.models import ImportJob, Message, Project, Run, Thread
from transcripts.pagination import encode_cursor

PACKAGE = Path(transcripts.__file__).resolve().parent

# Modules that may query: the read layer, the one writer, the access policy and its adapters,
# middleware and the database router.
ALLOWED = (
    "selectors/",
    "ledger/",
    "permissions.py",
    "web/access.py",
    "api/access.py",
    "api/auth.py",
    "outage.py",
    "read_your_writes.py",
    "db_router.py",
)
# Modules whose queries are their caller's: model managers, lazy relations, field types.
PASS_THROUGH = ("models.py", "fields.py")


@dataclass(frozen=True)
class Offence:
    """A query issued from a module that may not query."""

    where: str
    sql: str

    def __str__(self) -> str:
        return f"{self.where}: {self.sql[:160]}"


def issuer(stack: list[traceback.FrameSummary]) -> str | None:
    """The package-relative file:line that issued a query (innermost transcripts frame past
    the pass-through modules), or None when no transcripts code is on the stack."""
    for frame in reversed(stack):
        path = Path(frame.filename).resolve()
        if not path.is_relative_to(PACKAGE):
            continue
        relative = path.relative_to(PACKAGE).as_posix()
        if relative in PASS_THROUGH:
            continue
        return f"{relative}:{frame.lineno}"
    return None


def may_query(where: str) -> bool:
    """Whether a query issued at where (file:line relative to the package) is allowed."""
    return where.rsplit(":", 1)[0].startswith(ALLOWED)


class Recorder:
    """An execute wrapper keeping the queries issued from modules that may not query."""

    def __init__(self) -> None:
        self.offences: list[Offence] = []

    def __call__(
        self, execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any
    ) -> Any:
        where = issuer(traceback.extract_stack())
        if where is not None and not may_query(where):
            self.offences.append(Offence(where, str(sql)))
        return execute(sql, params, many, context)


@contextmanager
def recording() -> Iterator[Recorder]:
    """Record the offending queries run inside the block."""
    recorder = Recorder()
    with connection.execute_wrapper(recorder):
        yield recorder


# --- the seeded project -----------------------------------------------------------------------


@dataclass
class Seeded:
    """The demo project, its admin, and the ids the URLs are made of."""

    web: Client
    api: Client
    token: str
    ids: dict[str, str]


def _rivals(project: Project) -> tuple[Run, Run]:
    """Two runs answering the same message (a comparison)."""
    runs = Run.objects.filter(thread__project=project, fork_from__isnull=False)
    seen: dict[str, Run] = {}
    for run in runs.order_by("created_at"):
        if run.fork_from_id in seen:
            return seen[run.fork_from_id], run
        seen[run.fork_from_id] = run
    raise AssertionError("the demo has no regenerated answer")


def _seed_ids(admin: Any, project: Project) -> dict[str, str]:
    a, b = _rivals(project)
    fork = a.thread
    thread = Thread.objects.filter(project=project).order_by("-updated_at").first()
    message = Message.objects.filter(thread=fork).order_by("-depth").first()
    root = Message.objects.filter(thread=fork, depth=0).first()
    assert thread is not None and message is not None and root is not None
    _, secret = ledger.create_share(thread=fork, user=admin)
    report_message(user=admin, message=message, reason="other", note="check")
    # Judgement (issue 28): a config, a score on the message and feedback on an answer.
    scores.create_score_config(
        project=project, author=scores.Author(user=admin), spec=scores.ConfigSpec("tone", "boolean")
    )
    scores.add_score(
        target=scores.Target(fork, message=message),
        author=scores.Author(token_name="evaluator"),
        spec=scores.ScoreSpec("tone", 1),
    )
    answer = Message.objects.filter(thread=fork, role="assistant").first()
    assert answer is not None
    scores.give_feedback(user=admin, message=answer, up=True, comment="clear")
    # An open run: the conversation shows it live.
    live, _ = ledger.begin_run(thread=fork, status="queued", generator="demo")
    job = ImportJob.objects.create(filename="mine.json", size=1, user=admin, project=project)
    return {
        "slug": project.slug,
        "thread": fork.id,
        "leaf": message.id,
        "root": root.id,
        "fork": a.fork_from_id,
        "run": a.id,
        "a": a.id,
        "b": b.id,
        "secret": secret,
        "job": job.id,
        "open_run": live.id,
        "thread_cursor": encode_cursor(thread.updated_at, thread.id),
        "path_cursor": encode_cursor(0),
        "audit_cursor": encode_cursor(timezone.now(), 2**40),
    }


@pytest.fixture
def seeded(db: Any) -> Seeded:
    """The demo threads in the default project, read by its admin (a browser and a token)."""
    assert load_demo()
    project = default_project()
    admin = make_user("demo-admin")
    set_member(project=project, user=admin, role="admin")
    web = Client()
    web.force_login(admin)
    _, token = issue_token(name="reads", scopes=("ingest", "read", "admin"), project=project)
    return Seeded(web=web, api=Client(), token=token, ids=_seed_ids(admin, project))


PAGES = [
    "/",
    "/?q=weather",
    "/?sort=title&status=visible&branches=1&failed=1&flagged=1",
    "/?who=demo&since=2000-01-01&until=2999-01-01",
    "/?cursor={thread_cursor}",
    "/t/{thread}/",
    "/t/{thread}/?leaf={leaf}",
    "/t/{thread}/?dir=before&from={leaf}",
    "/t/{thread}/?dir=after&from={root}",
    "/t/{thread}/fork/{fork}/compare/",
    "/t/{thread}/tree/",
    "/t/{thread}/shares/",
    "/s/{secret}/",
    "/runs/{run}/",
    "/runs/{run}/?after=1",
    "/runs/{open_run}/live/",
    "/compare/?a={a}&b={b}",
    "/moderation/",
    "/moderation/?status=resolved",
    "/new/",
    "/p/{slug}/",
    "/p/{slug}/audit/",
    "/p/{slug}/audit/?cursor={audit_cursor}",
    "/p/{slug}/datasets/",
    "/p/{slug}/scores/",
    "/p/{slug}/datasets/?kind=sft&branches=all&dated=created&model=demo&agent=a",
    "/import/",
    "/import/{job}/",
]

API_GETS = [
    "/threads",
    "/threads?cursor={thread_cursor}",
    "/threads/{thread}",
    "/threads/{thread}/messages",
    "/threads/{thread}/messages?cursor={path_cursor}",
    "/threads/{thread}/shares",
    "/runs/{run}",
    "/runs/{run}/messages",
    "/runs/{run}/events",
    "/imports/{job}",
    "/runs?status=committed",
    "/chat/{thread}/messages",
    "/scores",
    "/scores?threadId={thread}&name=tone",
    "/score-configs",
]


def _assert_clean(recorder: Recorder, url: str) -> None:
    offences = "\n".join(sorted({str(o) for o in recorder.offences}))
    assert not recorder.offences, f"{url} queries outside selectors:\n{offences}"


@pytest.mark.parametrize("url", PAGES)
def test_pages_read_only_through_selectors(seeded: Seeded, url: str) -> None:
    path = url.format(**seeded.ids)
    with recording() as recorder:
        response = seeded.web.get(path)
        b"".join(response) if response.streaming else response.content
    assert response.status_code == 200, path
    _assert_clean(recorder, path)


@pytest.mark.parametrize("url", API_GETS)
def test_api_reads_only_through_selectors(seeded: Seeded, url: str) -> None:
    path = "/api/v1" + url.format(**seeded.ids)
    headers = {"Authorization": f"Bearer {seeded.token}"}
    with recording() as recorder:
        response = seeded.api.get(path, headers=headers)
        b"".join(response) if response.streaming else response.content
    assert response.status_code == 200, (path, response.content[:300])
    _assert_clean(recorder, path)


# --- the check catches what it should ---------------------------------------------------------


def _frame(relative: str, line: int = 7) -> traceback.FrameSummary:
    return traceback.FrameSummary(str(PACKAGE / relative), line, "f")


def test_the_issuer_is_the_innermost_package_frame_past_models() -> None:
    outside = traceback.FrameSummary("/usr/lib/django/db/models/query.py", 1, "g")
    stack = [_frame("web/views/runs.py", 3), _frame("selectors/runs.py", 9), _frame("models.py")]
    assert issuer([*stack, outside]) == "selectors/runs.py:9"
    stack = [_frame("selectors/runs.py", 9), _frame("web/presenters/runs.py", 4), outside]
    assert issuer(stack) == "web/presenters/runs.py:4"
    assert issuer([_frame("web/views/runs.py", 3), _frame("models.py", 2)]) == "web/views/runs.py:3"
    assert issuer([outside]) is None


@pytest.mark.parametrize(
    ("where", "allowed"),
    [
        ("selectors/threads.py:1", True),
        ("ledger/append.py:1", True),
        ("permissions.py:1", True),
        ("web/access.py:1", True),
        ("api/access.py:1", True),
        ("web/views/threads.py:1", False),
        ("web/presenters/runs.py:1", False),
        ("templatetags/relative_times.py:1", False),
        ("api/threads.py:1", False),
        ("web/context.py:1", False),
    ],
)
def test_only_allowed_modules_may_query(where: str, allowed: bool) -> None:
    assert may_query(where) is allowed


def test_a_query_issued_from_a_view_module_is_caught(db: Any) -> None:
    # A function compiled as if it lived in transcripts/web/views: its query must be caught.
    source = "def probe(model):\n    return model.objects.filter(title='-').exists()\n"
    namespace: dict[str, Any] = {}
    exec(compile(source, str(PACKAGE / "web" / "views" / "probe.py"), "exec"), namespace)
    with recording() as recorder:
        namespace["probe"](Thread)
    assert [o.where for o in recorder.offences] == ["web/views/probe.py:2"]
