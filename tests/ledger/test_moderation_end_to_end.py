"""Moderation seen from outside: every way a reader could get at redacted or hidden content."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from tests.api.conftest import ApiClient, make_token  # noqa: F401
from tests.api.sse_client import frames
from tests.factories import ask, conversation, make_run
from transcripts import interchange
from transcripts.ledger import moderation
from transcripts.ledger.default_project import default_project
from transcripts.ledger.tokens import issue_token
from transcripts.models import AuditRecord, Message, Report, Run, Thread

SECRET = "zebracorn-4417-private"


def _secret_branch() -> tuple[Thread, Message, Message]:
    """A thread whose superseded answer holds SECRET in text, reasoning and a tool call."""
    thread = conversation(turns=1, title="Passwords")
    prompt = Message.objects.get(thread=thread, run=ask(thread, "what is my password?").id)
    run = make_run(
        thread,
        ("reasoning", {"text": f"the password is {SECRET}"}),
        ("text-delta", {"delta": f"Your password is {SECRET}"}),
        ("tool-call", {"toolCallId": "c1", "toolName": "vault", "input": {"q": SECRET}}),
        fork_from=prompt.id,
    )
    make_run(thread, ("text-delta", {"delta": "I cannot tell you."}), fork_from=prompt.id)
    secret = Message.objects.get(run=run, role="assistant", parts__0__type="reasoning")
    return thread, prompt, secret


def _api_views(thread: Thread, message: Message) -> dict[str, str]:
    run = message.run_id
    views = {
        "replay": f"/runs/{run}/events?afterSeq=0&limit=1000",
        "run messages": f"/runs/{run}/messages",
        "path messages": f"/threads/{thread.id}/messages?leaf={message.id}",
    }
    for fmt in interchange.EXPORT_FORMATS:
        views[f"export {fmt}"] = f"/threads/{thread.id}/export?format={fmt}&leaf={message.id}"
    views["export canonical with events"] = f"/threads/{thread.id}/export?events=true"
    return views


def _pages(thread: Thread, prompt: Message, message: Message) -> dict[str, str]:
    return {
        "conversation": f"/t/{thread.id}/?leaf={message.id}",
        "compare": f"/t/{thread.id}/fork/{prompt.id}/compare/",
        "compare rendered": f"/t/{thread.id}/fork/{prompt.id}/compare/?view=rendered",
        "run timeline": f"/runs/{message.run_id}/",
    }


def _body(response: Any) -> str:
    """The text of a 200 response, streamed or not."""
    assert response.status_code == 200
    if response.streaming:
        return b"".join(response.streaming_content).decode()
    return str(response.content.decode())


@pytest.mark.django_db
def test_redaction_leaves_no_trace_in_the_api_the_exports_the_pages_or_search(
    admin_user: User, viewer: User
) -> None:
    thread, prompt, secret = _secret_branch()
    api = ApiClient(issue_token(project=default_project(), name="reader", scopes=["read"])[1])
    browser = Client()
    browser.force_login(viewer)
    api_views, pages = _api_views(thread, secret), _pages(thread, prompt, secret)
    # Every view shows the secret before (so that the checks below can fail)...
    for name, path in api_views.items():
        assert SECRET in _body(api.get(path)), name
    for name, path in pages.items():
        assert SECRET in browser.get(path).content.decode(), name
    assert api.get("/threads", q=SECRET).json()["threads"][0]["id"] == thread.id
    assert thread.title in browser.get("/", {"q": SECRET}).content.decode()

    moderation.redact_message(user=admin_user, message=secret, reason="a password")

    # ... and none after, while they all still answer.
    for name, path in api_views.items():
        assert SECRET not in _body(api.get(path)), name
    for name, path in pages.items():
        response = browser.get(path)
        assert response.status_code == 200, name
        assert SECRET not in response.content.decode(), name
    assert moderation.REDACTION_TEXT in browser.get(pages["compare"]).content.decode()
    assert api.get("/threads", q=SECRET).json()["threads"] == []
    assert thread.title not in browser.get("/", {"q": SECRET}).content.decode()
    staff = Client()
    staff.force_login(admin_user)
    found = staff.get(reverse("admin:transcripts_message_changelist"), {"q": SECRET})
    assert found.context["cl"].result_count == 0


@pytest.mark.django_db(transaction=True)
def test_redaction_leaves_no_trace_in_the_live_stream(
    live_server_asgi: Any,
    make_token: Any,  # noqa: F811
    admin_user: User,
) -> None:
    _, _, secret = _secret_branch()
    url = f"{live_server_asgi.url}/api/v1/runs/{secret.run_id}/stream?afterSeq=0"
    headers = {"Authorization": f"Bearer {make_token('read')}"}

    def streamed() -> str:
        with httpx.stream("GET", url, headers=headers, timeout=20) as response:
            assert response.status_code == 200
            return "".join(f.data for f in frames(response))

    assert SECRET in streamed()
    moderation.redact_message(user=admin_user, message=secret, reason="a password")
    replay = streamed()
    # The whole backlog still streams, up to the closing status frame, scrubbed.
    assert SECRET not in replay and '"redacted": true' in replay and '"lastSeq":3' in replay


# --- hidden threads through the API --------------------------------------------------------


@pytest.mark.django_db
def test_an_admin_token_reading_a_hidden_thread_is_audited_once_per_window(
    moderator: User, viewer: User
) -> None:
    thread = conversation(turns=1)
    run = Run.objects.filter(thread=thread).first()
    assert run is not None
    staff = ApiClient(
        issue_token(project=default_project(), name="mod-script", scopes=["admin"], user=moderator)[
            1
        ]
    )
    plain = ApiClient(
        issue_token(project=default_project(), name="viewer-script", scopes=["read"], user=viewer)[
            1
        ]
    )
    assert staff.get(f"/threads/{thread.id}").status_code == 200
    assert not AuditRecord.objects.filter(action="view_hidden").exists()  # not hidden yet

    moderation.hide_thread(user=moderator, thread=thread, reason="spam")
    for path in (f"/threads/{thread.id}", f"/runs/{run.id}/events", f"/runs/{run.id}"):
        assert plain.get(path).status_code == 404
    assert not AuditRecord.objects.filter(action="view_hidden").exists()
    for path in (
        f"/threads/{thread.id}",
        f"/threads/{thread.id}/messages",
        f"/runs/{run.id}/events",
        f"/runs/{run.id}",
        f"/threads/{thread.id}/export",
    ):
        assert staff.get(path).status_code == 200, path
    record = AuditRecord.objects.get(action="view_hidden")
    assert (record.actor, record.target_id, record.details["via"]) == (moderator, thread.id, "api")
    assert record.details["caller"] == "mod-script"


# --- the admin -----------------------------------------------------------------------------


@pytest.fixture
def admin_browser(client: Client, admin_user: User) -> Client:
    client.force_login(admin_user)
    return client


@pytest.mark.django_db
def test_the_admin_pages_link_related_objects_and_the_links_filter(
    admin_browser: Client, admin_user: User, viewer: User
) -> None:
    thread, prompt, secret = _secret_branch()
    other = conversation(turns=1, title="Other")
    Report.objects.create(message=secret, thread=thread, reporter=viewer, reason="spam")
    moderation.flag_message(user=admin_user, message=secret, reason="pii")
    page = admin_browser.get(reverse("admin:transcripts_thread_change", args=[thread.id]))
    content = page.content.decode()
    links = {
        "run": f"?thread__id__exact={thread.id}",
        "message": f"?thread__id__exact={thread.id}",
        "event": f"?run__thread__id__exact={thread.id}",
        "report": f"?thread__id__exact={thread.id}",
        "auditrecord": f"?thread_id={thread.id}",
    }
    for model, query in links.items():
        url = reverse(f"admin:transcripts_{model}_changelist") + query
        assert url in content, model
        listed = admin_browser.get(url)
        assert listed.status_code == 200, model  # a lookup the admin refuses redirects (?e=1)
        rows = list(listed.context["cl"].result_list)
        assert rows and all(getattr(r, "thread_id", thread.id) == thread.id for r in rows), model
    assert (
        other.id
        not in admin_browser.get(
            reverse("admin:transcripts_event_changelist") + f"?run__thread__id__exact={thread.id}"
        ).content.decode()
    )
    run_page = admin_browser.get(reverse("admin:transcripts_run_change", args=[secret.run_id]))
    run_content = run_page.content.decode()
    assert f"/t/{thread.id}/fork/{prompt.id}/compare/" in run_content
    for model in ("message", "event"):
        url = reverse(f"admin:transcripts_{model}_changelist") + f"?run__id__exact={secret.run_id}"
        assert url in run_content
        assert admin_browser.get(url).context["cl"].result_count > 0
    message_page = admin_browser.get(reverse("admin:transcripts_message_change", args=[secret.id]))
    assert reverse("admin:transcripts_run_change", args=[secret.run_id]) in (
        message_page.content.decode()
    )
    reports = reverse("admin:transcripts_report_changelist") + f"?message__id__exact={secret.id}"
    assert admin_browser.get(reports).context["cl"].result_count == 1
    audit = admin_browser.get(reverse("admin:transcripts_auditrecord_changelist")).content
    assert reverse("admin:transcripts_message_change", args=[secret.id]).encode() in audit


@pytest.mark.django_db
def test_the_thread_list_of_the_admin_searches_message_text_and_ids(
    admin_browser: Client,
) -> None:
    thread, _, secret = _secret_branch()
    conversation(turns=1, title="Unrelated")
    url = reverse("admin:transcripts_thread_changelist")
    for term in (SECRET, "Passwords", secret.id, secret.run_id, thread.id):
        found = admin_browser.get(url, {"q": term}).context["cl"].result_list
        assert [t.id for t in found] == [thread.id], term
    assert not admin_browser.get(url, {"q": "nothing-like-this"}).context["cl"].result_list


@pytest.mark.django_db
def test_moderators_are_not_offered_the_actions_they_may_not_take(
    client: Client, moderator: User, admin_user: User
) -> None:
    conversation(turns=1)
    client.force_login(moderator)

    def actions(model: str) -> set[str]:
        page = client.get(reverse(f"admin:transcripts_{model}_changelist"))
        return {value for value, _ in page.context["action_form"].fields["action"].choices}

    assert {"flag", "unflag"} <= actions("message") and "redact" not in actions("message")
    assert {"hide", "lock"} <= actions("thread") and "delete_with_reason" not in actions("thread")
    client.force_login(admin_user)
    assert "redact" in actions("message") and "delete_with_reason" in actions("thread")


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("model", "action", "extra", "audited"),
    [
        ("thread", "lock", {"reason": "raid"}, "lock"),
        ("thread", "unlock", {"reason": "calm"}, "unlock"),
        ("message", "flag", {"reason": "pii"}, "flag"),
        ("message", "unflag", {"reason": "fine"}, "unflag"),
        ("message", "redact", {"confirmed": "yes", "confirmed_reason": "pii"}, "redact"),
        ("thread", "delete_with_reason", {"confirmed": "yes", "confirmed_reason": "x"}, "delete"),
    ],
)
def test_every_bulk_action_writes_one_audit_record_per_object(
    admin_browser: Client, model: str, action: str, extra: dict[str, str], audited: str
) -> None:
    threads = [conversation(turns=1, title=f"t{i}") for i in range(3)]
    if action == "unlock":
        Thread.objects.update(locked=True)
    if action == "unflag":
        Message.objects.update(flagged_at="2026-01-01T00:00:00Z", flag_reason="x")
    if model == "thread":
        ids = [t.id for t in threads]
    else:
        ids = [Message.objects.filter(thread=t, role="assistant").get().id for t in threads]
    response = admin_browser.post(
        reverse(f"admin:transcripts_{model}_changelist"),
        {"action": action, "_selected_action": ids, **extra},
    )
    assert response.status_code == 302
    records = AuditRecord.objects.filter(action=audited)
    assert sorted(r.target_id for r in records) == sorted(ids)
    assert all(r.actor_name == "boss" for r in records)


@pytest.mark.django_db
def test_an_action_whose_audit_record_cannot_be_written_changes_nothing(
    admin_user: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    thread, _, secret = _secret_branch()

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("the audit log is unavailable")

    monkeypatch.setattr(moderation, "record_audit", broken)
    with pytest.raises(RuntimeError):
        moderation.hide_thread(user=admin_user, thread=thread, reason="spam")
    with pytest.raises(RuntimeError):
        moderation.redact_message(user=admin_user, message=secret, reason="pii")
    with pytest.raises(RuntimeError):
        moderation.delete_thread(user=admin_user, thread=thread, reason="gone")
    assert Thread.objects.filter(pk=thread.pk, hidden=False).exists()
    secret.refresh_from_db()
    assert secret.redacted_at is None and SECRET in str(secret.parts)


@pytest.mark.django_db
def test_the_token_changelist_uses_the_same_number_of_queries_for_2_and_12_tokens(
    admin_browser: Client,
) -> None:
    def add(count: int) -> None:
        for index in range(count):
            user = User.objects.create_user(f"owner{User.objects.count()}-{index}")
            issue_token(project=default_project(), name=f"t{index}", scopes=["read"], user=user)

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert (
                admin_browser.get(reverse("admin:transcripts_apitoken_changelist")).status_code
                == 200
            )
        return len(captured)

    add(2)
    few = queries()
    add(10)
    assert queries() == few


@pytest.mark.django_db
def test_deleting_from_the_change_page_asks_for_a_reason_and_keeps_the_audit_record(
    admin_browser: Client, moderator: User
) -> None:
    thread, _, _ = _secret_branch()
    url = reverse("admin:transcripts_thread_delete", args=[thread.id])
    page = admin_browser.get(url)
    assert page.status_code == 200 and b"deleted for good" in page.content
    assert SECRET.encode() not in page.content  # no listing of every event and message
    refused = admin_browser.post(url, {"confirmed": "yes", "confirmed_reason": " "})
    assert b"A reason is required" in refused.content
    assert Thread.objects.filter(pk=thread.pk).exists()
    done = admin_browser.post(url, {"confirmed": "yes", "confirmed_reason": "illegal content"})
    assert done.status_code == 302
    assert not Thread.objects.filter(pk=thread.pk).exists()
    assert not Message.objects.filter(thread_id=thread.pk).exists()
    record = AuditRecord.objects.get(action="delete")
    assert (record.target_id, record.reason) == (thread.id, "illegal content")

    other = conversation(turns=1)
    client = Client()
    client.force_login(moderator)
    other_url = reverse("admin:transcripts_thread_delete", args=[other.id])
    assert client.post(other_url, {"confirmed": "yes", "confirmed_reason": "x"}).status_code == 403
    assert Thread.objects.filter(pk=other.pk).exists()
    assert (
        admin_browser.get(reverse("admin:transcripts_thread_delete", args=["nope"])).status_code
        == 404
    )
