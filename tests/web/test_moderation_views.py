"""Reporting a message from the conversation, and the moderation queue."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from tests.base import Team
from tests.factories import ask, conversation, last_message, make_thread, say
from transcripts.ledger import moderation
from transcripts.models import AuditRecord, Message, Report, ReportStatus, Thread

pytestmark = pytest.mark.django_db


def _answer() -> tuple[Thread, Message]:
    thread = make_thread("Advice")
    ask(thread, "How do I reset my password?")
    answer = last_message(say(thread, "Email your password to support@example.com"))
    thread.refresh_from_db()
    return thread, answer


def _report_url(message: Message) -> str:
    return f"/t/{message.thread_id}/m/{message.id}/report/"


# --- reporting -----------------------------------------------------------------------------


def test_every_message_has_a_report_action_that_works_without_javascript(
    viewer_client: Client,
) -> None:
    thread, answer = _answer()
    content = viewer_client.get(f"/t/{thread.id}/").content.decode()
    assert f'href="{_report_url(answer)}"' in content
    form = viewer_client.get(_report_url(answer))
    assert form.status_code == 200
    page = form.content.decode()
    assert "<!doctype html>" in page and 'name="reason"' in page and 'name="note"' in page
    assert all(label in page for _, label in Report.REASONS)


def test_a_viewer_reports_a_message_with_a_reason_and_a_note(
    viewer_client: Client, viewer: Any
) -> None:
    thread, answer = _answer()
    response = viewer_client.post(
        _report_url(answer), {"reason": "privacy", "note": "asks for a password"}
    )
    assert response.status_code == 303
    assert response["Location"] == f"/t/{thread.id}/?leaf={answer.id}#m-{answer.id}"
    report = Report.objects.get()
    assert (report.message_id, report.thread_id, report.reporter_id) == (
        answer.id,
        thread.id,
        viewer.pk,
    )
    assert (report.reason, report.note, report.status) == ("privacy", "asks for a password", "open")
    assert AuditRecord.objects.filter(action="report", target_id=answer.id).exists()
    page = viewer_client.get(response["Location"]).content.decode()
    assert "the moderators will look at this message" in page


def test_an_htmx_report_swaps_the_inline_form_for_a_thank_you(
    viewer_client: Client, htmx: Any
) -> None:
    _, answer = _answer()
    form = viewer_client.get(_report_url(answer), headers=htmx).content.decode()
    assert form.lstrip().startswith('<form class="report-form')
    done = viewer_client.post(_report_url(answer), {"reason": "spam"}, headers=htmx)
    assert done.status_code == 200
    assert "the moderators will look at this message" in done.content.decode()
    assert Report.objects.filter(reason="spam").count() == 1


def test_a_report_without_a_valid_reason_is_shown_again_with_an_error(
    viewer_client: Client, htmx: Any
) -> None:
    _, answer = _answer()
    response = viewer_client.post(_report_url(answer), {"reason": "boring"}, headers=htmx)
    assert response.status_code == 200
    content = response.content.decode()
    assert 'class="form-error"' in content and content.lstrip().startswith("<form")
    assert not Report.objects.exists()


def test_reporting_needs_a_login_and_a_thread_the_reader_may_see(
    outsider: Client, viewer_client: Client, moderator_client: Client
) -> None:
    thread, answer = _answer()
    response = outsider.post(_report_url(answer), {"reason": "spam"})
    assert response.status_code == 302 and "login" in response["Location"]
    other = conversation(1)
    assert viewer_client.get(f"/t/{other.id}/m/{answer.id}/report/").status_code == 404
    assert viewer_client.get(f"/t/{thread.id}/m/garbage/report/").status_code == 404
    Thread.objects.filter(pk=thread.pk).update(hidden=True)
    assert viewer_client.post(_report_url(answer), {"reason": "spam"}).status_code == 404
    assert not Report.objects.exists()
    assert moderator_client.post(_report_url(answer), {"reason": "spam"}).status_code == 303


# --- the queue -----------------------------------------------------------------------------


def _report(message: Message, reporter: Any, reason: str = "harmful") -> Report:
    return moderation.report_message(user=reporter, message=message, reason=reason, note="look")


def test_only_moderators_see_the_queue_and_its_link(
    outsider: Client,
    viewer_client: Client,
    editor: User,
    editor_client: Client,
    moderator_client: Client,
) -> None:
    response = outsider.get("/moderation/")
    assert response.status_code == 302 and "login" in response["Location"]
    assert viewer_client.get("/moderation/").status_code == 403
    User.objects.filter(pk=editor.pk).update(is_staff=True)
    refused = editor_client.get("/moderation/")  # staff, but no moderator of any project
    assert refused.status_code == 403 and b"moderator role" in refused.content
    queue = moderator_client.get("/moderation/")
    assert queue.status_code == 200
    # The queue links the audit log of the moderator's current project.
    assert re.search(r'href="/p/[\w-]+/audit/"', queue.content.decode())
    assert 'href="/moderation/"' in moderator_client.get("/").content.decode()
    assert 'href="/moderation/"' not in editor_client.get("/").content.decode()
    assert 'href="/moderation/"' not in viewer_client.get("/").content.decode()


def test_the_queue_lists_open_reports_with_a_preview_and_a_link_to_the_message(
    moderator_client: Client, viewer: Any
) -> None:
    thread, answer = _answer()
    open_report = _report(answer, viewer, "privacy")
    closed = _report(answer, viewer, "spam")
    Report.objects.filter(pk=closed.pk).update(status=ReportStatus.DISMISSED)
    content = moderator_client.get("/moderation/").content.decode()
    assert f'id="report-{open_report.pk}"' in content
    assert f'id="report-{closed.pk}"' not in content
    assert "Personal or secret data" in content
    assert "Email your password to support@example.com" in content
    assert f'href="/t/{thread.id}/?leaf={answer.id}#m-{answer.id}"' in content
    assert 'Open <span class="count">1</span>' in content
    dismissed = moderator_client.get("/moderation/?status=dismissed").content.decode()
    assert (
        f'id="report-{closed.pk}"' in dismissed and f'id="report-{open_report.pk}"' not in dismissed
    )
    everything = moderator_client.get("/moderation/?status=all").content.decode()
    assert everything.index(f'id="report-{open_report.pk}"') < everything.index(
        f'id="report-{closed.pk}"'
    )


def test_a_moderator_resolves_a_report(
    moderator_client: Client, moderator: User, viewer: Any
) -> None:
    _, answer = _answer()
    report = _report(answer, viewer)
    response = moderator_client.post(
        f"/moderation/reports/{report.pk}/close/",
        {"status": "resolved", "note": "redacted the address", "next": "/moderation/"},
    )
    assert response.status_code == 303 and response["Location"] == "/moderation/"
    report.refresh_from_db()
    assert report.status == "resolved" and report.resolved_by == moderator
    assert report.resolution_note == "redacted the address"
    assert AuditRecord.objects.filter(action="resolve_report", target_id=str(report.pk)).exists()
    page = moderator_client.get("/moderation/").content.decode()
    assert f"Resolved report {report.pk}." in page and "No open reports" in page


def test_an_htmx_dismissal_swaps_the_row_and_a_second_one_says_why_it_failed(
    moderator_client: Client, viewer: Any, htmx: Any
) -> None:
    _, answer = _answer()
    report = _report(answer, viewer)
    url = f"/moderation/reports/{report.pk}/close/"
    response = moderator_client.post(url, {"status": "dismissed"}, headers=htmx)
    content = response.content.decode()
    assert content.lstrip().startswith(
        f'<li class="report-row st-dismissed" id="report-{report.pk}"'
    )
    assert "Dismissed by default-moderator" in content
    # The filter counts follow, swapped out of band.
    assert 'id="queue-tabs"' in content and 'hx-swap-oob="true"' in content
    assert 'Dismissed <span class="count">1</span>' in content
    again = moderator_client.post(url, {"status": "resolved"}, headers=htmx).content.decode()
    assert "already dismissed" in again
    assert Report.objects.get().status == "dismissed"


def test_closing_a_report_needs_a_moderator_and_a_valid_status(
    viewer_client: Client, moderator_client: Client, viewer: Any
) -> None:
    _, answer = _answer()
    report = _report(answer, viewer)
    url = f"/moderation/reports/{report.pk}/close/"
    assert viewer_client.post(url, {"status": "resolved"}).status_code == 403
    moderator_client.post(url, {"status": "open"})
    assert moderator_client.get(url).status_code == 405
    assert Report.objects.get().status == "open"
    assert moderator_client.post("/moderation/reports/999999/close/").status_code == 404


def test_the_queue_runs_the_same_number_of_queries_for_2_and_12_reports(
    moderator_client: Client, viewer: Any
) -> None:
    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert moderator_client.get("/moderation/?status=all").status_code == 200
        return len(captured)

    def add(count: int) -> None:
        for n in range(count):
            thread = conversation(1, title=f"Reported {n}")
            _report(Message.objects.filter(thread=thread).first(), viewer)  # type: ignore[arg-type]

    add(2)
    few = queries()
    add(10)
    assert queries() == few


# --- hidden threads and the flagged filter -------------------------------------------------


def test_a_moderator_opening_a_hidden_thread_is_recorded_once_per_page(
    moderator_client: Client, moderator: Any, htmx: Any
) -> None:
    thread, answer = _answer()
    moderator_client.get(f"/t/{thread.id}/")
    assert not AuditRecord.objects.filter(action="view_hidden").exists()
    Thread.objects.filter(pk=thread.pk).update(hidden=True)
    assert moderator_client.get(f"/t/{thread.id}/").status_code == 200
    moderator_client.get(f"/t/{thread.id}/?leaf={answer.id}", headers=htmx)  # a branch switch
    moderator_client.get(f"/t/{thread.id}/?dir=before&from={answer.id}", headers=htmx)
    record = AuditRecord.objects.get(action="view_hidden")
    assert (record.actor, record.target_type, record.target_id) == (moderator, "thread", thread.id)


def test_the_flagged_filter_finds_messages_flagged_by_a_moderator(
    viewer_client: Client, moderator: User
) -> None:
    _, answer = _answer()
    make_thread("Nothing to see")
    assert "Advice" not in viewer_client.get("/?flagged=on").content.decode()
    moderation.flag_message(user=moderator, message=answer, reason="leaks an address")
    content = viewer_client.get("/?flagged=on").content.decode()
    assert "Advice" in content and "Nothing to see" not in content


# --- acting from the queue -----------------------------------------------------------------

HTMX = {"HX-Request": "true"}
SECRET = "card 4111-1111-1111-1111 <b>bold</b>"


def _alpha_report(team: Team, text: str = SECRET) -> Report:
    """An open report by alpha's viewer on an assistant answer in alpha."""
    thread = make_thread("Payments", project=team.alpha)
    ask(thread, "What is on file?")
    answer = last_message(say(thread, text))
    return moderation.report_message(
        user=team.viewer, message=answer, reason="privacy", note="a card number"
    )


def _act(report: Report) -> str:
    return f"/moderation/reports/{report.pk}/act/"


def _redact(report: Report) -> str:
    return f"/moderation/reports/{report.pk}/redact/"


def test_each_report_row_offers_the_actions_its_reader_may_take(team: Team) -> None:
    report = _alpha_report(team)
    row = team.client(team.moderator).get("/moderation/").content.decode()
    for label in ("Hide thread", "Lock thread", "Flag message", "Resolve the report in the same"):
        assert label in row
    assert f'value="Report {report.pk}: Personal or secret data: a card number"' in row
    assert f'action="{_act(report)}"' in row and "Redact message" not in row
    admin_row = team.client(team.owner).get("/moderation/").content.decode()
    assert f'href="{_redact(report)}?tab=open' in admin_row


def test_a_moderator_hides_the_thread_and_resolves_the_report_without_javascript(
    team: Team,
) -> None:
    report = _alpha_report(team)
    client = team.client(team.moderator)
    response = client.post(
        _act(report),
        {"action": "hide", "reason": "leaks a card", "resolve": "on", "next": "/moderation/"},
    )
    assert response.status_code == 303 and response["Location"] == "/moderation/"
    report.refresh_from_db()
    assert Thread.objects.get(pk=report.thread_id).hidden
    assert (report.status, report.resolution_note) == ("resolved", "leaks a card")
    assert list(
        AuditRecord.objects.filter(thread_id=report.thread_id)
        .order_by("id")
        .values_list("action", "reason")
    )[1:] == [("hide", "leaks a card"), ("resolve_report", "leaks a card")]
    page = client.get("/moderation/").content.decode()
    assert f"Hid 1 thread. Resolved report {report.pk}." in page


def test_an_htmx_action_updates_the_row_in_place_and_can_leave_the_report_open(
    team: Team,
) -> None:
    report = _alpha_report(team)
    response = team.client(team.moderator).post(
        _act(report), {"action": "lock", "reason": "legal hold", "tab": "open"}, headers=HTMX
    )
    content = response.content.decode()
    assert content.lstrip().startswith(f'<li class="report-row st-open" id="report-{report.pk}"')
    assert "Locked 1 thread." in content and "Unlock thread" in content
    assert 'id="queue-tabs"' in content and 'hx-swap-oob="true"' in content
    assert Thread.objects.get(pk=report.thread_id).locked
    assert Report.objects.get(pk=report.pk).status == "open"


def test_a_no_op_action_says_so_and_writes_nothing(team: Team) -> None:
    report = _alpha_report(team)
    client = team.client(team.moderator)
    client.post(_act(report), {"action": "flag", "reason": "pii"}, headers=HTMX)
    records = AuditRecord.objects.count()
    # A second moderator's stale page still offers Flag.
    again = client.post(
        _act(report), {"action": "flag", "reason": "pii", "resolve": "on"}, headers=HTMX
    ).content.decode()
    assert "The message is already flagged: nothing changed. The report is still open." in again
    assert AuditRecord.objects.count() == records
    assert Report.objects.get(pk=report.pk).status == "open"
    plain = client.post(_act(report), {"action": "unhide", "reason": "x", "next": "/moderation/"})
    assert plain.status_code == 303
    assert (
        "The thread is already visible: nothing changed."
        in client.get("/moderation/").content.decode()
    )
    assert AuditRecord.objects.count() == records


def test_acting_needs_a_moderator_of_the_report_s_project(team: Team) -> None:
    report = _alpha_report(team)
    for user in (team.viewer, team.editor):
        refused = team.client(user).post(_act(report), {"action": "hide", "reason": "x"})
        assert refused.status_code == 403 and b"moderator role" in refused.content
    for user in (team.outsider, team.stranger):
        assert team.client(user).post(_act(report), {"action": "hide"}).status_code == 404
    assert team.client(team.moderator).get(_act(report)).status_code == 405
    bad = team.client(team.moderator).post(_act(report), {"action": "redact", "reason": "x"})
    assert bad.status_code == 303
    assert not Thread.objects.get(pk=report.thread_id).hidden
    assert Report.objects.get(pk=report.pk).status == "open"
    assert not AuditRecord.objects.exclude(action="report").exists()


def test_redacting_from_the_queue_shows_the_text_first_and_needs_the_admin_role(
    team: Team,
) -> None:
    report = _alpha_report(team, SECRET + " " + "x" * 3000)
    refused = team.client(team.moderator).get(_redact(report))
    assert refused.status_code == 403 and b"admin role" in refused.content
    assert team.client(team.outsider).get(_redact(report)).status_code == 404
    page = team.client(team.owner).get(_redact(report) + "?next=/moderation/").content.decode()
    assert "<!doctype html>" in page and "cannot be undone" in page
    assert "card 4111-1111-1111-1111 &lt;b&gt;bold&lt;/b&gt;" in page and "<b>bold</b>" not in page
    [part] = Message.objects.get(pk=report.message_id).parts
    assert f"{len(part['text'])} characters in 1 part; the first 1500 are shown." in page
    assert f'value="Report {report.pk}: Personal or secret data: a card number"' in page
    assert 'name="resolve" value="on" checked' in page
    assert "4111" in str(Message.objects.get(pk=report.message_id).parts)  # a GET writes nothing


def test_a_confirmed_redaction_from_the_queue_erases_the_text_and_resolves_the_report(
    team: Team,
) -> None:
    report = _alpha_report(team)
    client = team.client(team.owner)
    missing = client.post(_redact(report), {"reason": " ", "confirmed": "yes"}, headers=HTMX)
    assert "A reason is required" in missing.content.decode()
    assert "4111" in str(Message.objects.get(pk=report.message_id).parts)
    assert client.post(_redact(report), {"reason": "pii"}, headers=HTMX).status_code == 200
    assert "4111" in str(Message.objects.get(pk=report.message_id).parts)  # not confirmed
    done = client.post(
        _redact(report), {"reason": "pii", "resolve": "on", "confirmed": "yes"}, headers=HTMX
    ).content.decode()
    assert "Redacted 1 message. Resolved report" in done and "st-resolved" in done
    assert "4111" not in str(Message.objects.get(pk=report.message_id).parts)
    assert Report.objects.get(pk=report.pk).status == "resolved"
    assert set(AuditRecord.objects.values_list("action", flat=True)) == {
        "report",
        "redact",
        "resolve_report",
    }


def test_a_moderator_may_not_redact_by_posting_either(team: Team) -> None:
    report = _alpha_report(team)
    refused = team.client(team.moderator).post(
        _redact(report), {"reason": "pii", "confirmed": "yes", "resolve": "on"}
    )
    assert refused.status_code == 403 and b"admin role" in refused.content
    assert "4111" in str(Message.objects.get(pk=report.message_id).parts)
    assert Report.objects.get(pk=report.pk).status == "open"


# --- the audit log -------------------------------------------------------------------------


def test_the_audit_log_names_threads_by_title_with_links(team: Team) -> None:
    report = _alpha_report(team)
    client = team.client(team.moderator)
    client.post(_act(report), {"action": "hide", "reason": "spam " * 80, "resolve": "on"})
    gone = make_thread("Old conversation", project=team.alpha)
    moderation.delete_thread(user=team.owner, thread=gone, reason="asked")
    page = client.get("/p/alpha/audit/").content.decode()
    assert f'<a class="audit-thread" href="/t/{report.thread_id}/">Payments</a>' in page
    answer = report.message_id
    assert f'href="/t/{report.thread_id}/?leaf={answer}#m-{answer}"' in page
    assert "Old conversation (deleted)" in page
