"""Browser tests of reporting, the moderation queue acting on reports, and the audit log:
Playwright with Debian's Chromium."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User

from tests.browser import BROWSER_TESTS, open_page, screenshot
from tests.factories import ask, last_message, make_thread, say
from transcripts.demo import load_demo
from transcripts.ledger import moderation
from transcripts.models import AuditRecord, Message, Report, ReportStatus, Thread

pytestmark = BROWSER_TESTS

CARD = "4111-1111-1111-1111"


def test_a_viewer_reports_a_message_and_a_moderator_resolves_it(
    browser: Any,
    live_server: Any,
    viewer: Any,
    moderator: Any,
) -> None:
    load_demo()
    thread = Thread.objects.get(title__startswith="Weather")
    page = open_page(browser, live_server, viewer)
    page.goto(f"{live_server.url}/t/{thread.id}/")
    answer = page.locator("article.msg.role-assistant").last
    answer.locator(".msg-menu summary").click()
    answer.get_by_role("link", name="Report message…").click()
    form = answer.locator("form.report-form")
    form.wait_for()
    form.locator("select[name=reason]").select_option("incorrect")
    form.locator("textarea[name=note]").fill("The forecast says rain until 08:00")
    screenshot(page, "30-report-form", full_page=False)
    form.get_by_role("button", name="Send report").click()
    answer.locator(".report-done").wait_for()
    report = Report.objects.get()
    assert (report.reason, report.reporter_id) == ("incorrect", viewer.pk)

    page = open_page(browser, live_server, moderator)
    page.goto(live_server.url + "/")
    page.get_by_role("link", name="Moderation").click()
    row = page.locator(f"#report-{report.pk}")
    assert "The forecast says rain until 08:00" in row.inner_text()
    assert "Factually incorrect" in row.inner_text()
    screenshot(page, "31-moderation-queue")
    row.locator("input[name=note]").fill("checked: the answer is right")
    row.get_by_role("button", name="Resolve").click()
    page.locator(f"#report-{report.pk}.st-resolved").wait_for()
    report.refresh_from_db()
    assert report.status == ReportStatus.RESOLVED and report.resolved_by == moderator
    assert AuditRecord.objects.filter(action="resolve_report").exists()
    screenshot(page, "32-report-resolved")
    page.get_by_role("link", name="Resolved").click()
    page.wait_for_url("**/moderation/?status=resolved")
    assert page.locator(f"#report-{report.pk}").is_visible()


def test_the_report_form_and_the_queue_work_at_360_pixels(
    browser: Any,
    live_server: Any,
    viewer: Any,
    moderator: Any,
) -> None:
    load_demo()
    thread = Thread.objects.get(title__startswith="Planner")
    page = open_page(browser, live_server, viewer, viewport={"width": 360, "height": 780})
    page.goto(f"{live_server.url}/t/{thread.id}/")
    answer = page.locator("article.msg.role-assistant").first
    answer.locator(".msg-menu summary").click()
    answer.get_by_role("link", name="Report message…").click()
    answer.locator("form.report-form").wait_for()
    assert page.evaluate("document.documentElement.scrollWidth") <= 360
    screenshot(page, "33-report-form-narrow", full_page=False)
    answer.locator("select[name=reason]").select_option("harmful")
    answer.get_by_role("button", name="Send report").click()
    answer.locator(".report-done").wait_for()
    page = open_page(browser, live_server, moderator, viewport={"width": 360, "height": 780})
    page.goto(f"{live_server.url}/moderation/")
    assert page.locator(".report-row").count() == 1
    assert page.evaluate("document.documentElement.scrollWidth") <= 360
    screenshot(page, "34-moderation-queue-narrow")


def _reported_secret(team: Any) -> Report:
    """An open report by alpha's viewer on an answer that leaks a card number."""
    thread = make_thread("Billing question", project=team.alpha)
    ask(thread, "What card do I have on file?")
    answer = last_message(say(thread, f"Your card is {CARD}, expiring 12/29. " + "More. " * 80))
    return moderation.report_message(
        user=team.viewer, message=answer, reason="privacy", note="shows a full card number"
    )


def _no_horizontal_overflow(page: Any, selector: str) -> None:
    """Neither the page nor any cell of selector's tables is wider than its box."""
    assert page.evaluate("document.documentElement.scrollWidth") <= page.viewport_size["width"]
    clipped = page.evaluate(
        """(selector) => [...document.querySelectorAll(selector + ' td, ' + selector + ' th')]
            .filter((cell) => cell.scrollWidth > cell.clientWidth + 1)
            .map((cell) => cell.textContent.trim().slice(0, 60))""",
        selector,
    )
    assert clipped == []
    table = page.locator(selector).first
    assert table.evaluate("(t) => t.getBoundingClientRect().right") <= page.viewport_size["width"]


def test_the_queue_redacts_after_showing_the_text_and_resolves_in_one_step(
    browser: Any,
    live_server: Any,
    team: Any,
) -> None:
    report = _reported_secret(team)
    page = open_page(browser, live_server, team.owner, viewport={"width": 1366, "height": 768})
    page.goto(f"{live_server.url}/moderation/")
    row = page.locator(f"#report-{report.pk}")
    assert row.get_by_role("checkbox", name="Resolve the report in the same step").is_checked()
    row.get_by_role("link", name="Redact message…").click()
    erased = row.locator(".redact-text")
    erased.wait_for()
    assert CARD in erased.inner_text()
    assert "cannot be undone" in row.inner_text()
    assert row.locator("input[name=reason]").input_value().startswith(f"Report {report.pk}:")
    screenshot(page, "35-moderation-redact-confirm", full_page=False)
    row.get_by_role("button", name="Redact for good").click()
    page.locator(f"#report-{report.pk}.st-resolved").wait_for()
    assert "Redacted 1 message. Resolved report" in row.inner_text()
    assert CARD not in page.content()
    message = Message.objects.get(pk=report.message_id)
    assert message.redacted_at is not None and CARD not in str(message.parts)
    report.refresh_from_db()
    assert report.status == ReportStatus.RESOLVED and report.resolved_by == team.owner
    actions = AuditRecord.objects.filter(thread_id=report.thread_id).values_list(
        "action", flat=True
    )
    assert sorted(actions) == ["redact", "report", "resolve_report"]
    assert page.locator("#queue-tabs .is-on .count").inner_text() == "0"
    screenshot(page, "36-moderation-redacted-and-resolved", full_page=False)


def test_a_moderator_hides_and_locks_from_the_queue(
    browser: Any,
    live_server: Any,
    team: Any,
) -> None:
    report = _reported_secret(team)
    page = open_page(browser, live_server, team.moderator, viewport={"width": 1366, "height": 768})
    page.goto(f"{live_server.url}/moderation/")
    row = page.locator(f"#report-{report.pk}")
    assert row.get_by_role("link", name="Redact message…").count() == 0  # admins only
    row.get_by_role("checkbox", name="Resolve the report in the same step").uncheck()
    row.get_by_role("button", name="Lock thread").click()
    row.get_by_role("button", name="Unlock thread").wait_for()
    assert "Locked 1 thread." in row.inner_text()
    assert Report.objects.get(pk=report.pk).status == ReportStatus.OPEN
    row.get_by_role("button", name="Hide thread").click()
    page.locator(f"#report-{report.pk}.st-resolved").wait_for()
    assert "Hid 1 thread. Resolved report" in row.inner_text()
    thread = Thread.objects.get(pk=report.thread_id)
    assert thread.hidden and thread.locked
    screenshot(page, "37-moderation-hid-and-locked", full_page=False)


def test_the_audit_log_wraps_at_1366_pixels_in_the_page_and_the_admin(
    browser: Any,
    live_server: Any,
    team: Any,
) -> None:
    report = _reported_secret(team)
    long_reason = "The answer repeats the customer's full card number and expiry date; " * 6
    moderation.act_on_report(user=team.owner, report=report, action="hide", reason=long_reason)
    moderation.flag_message(user=team.owner, message=report.message, reason="x" * 300)
    page = open_page(browser, live_server, team.owner, viewport={"width": 1366, "height": 768})
    page.goto(f"{live_server.url}/p/alpha/audit/")
    table = page.locator(".audit-table")
    assert "Billing question" in table.inner_text()
    _no_horizontal_overflow(page, ".audit-table")
    screenshot(page, "38-audit-log-1366", full_page=False)
    User.objects.filter(pk=team.owner.pk).update(is_staff=True)
    page.goto(f"{live_server.url}/admin/transcripts/auditrecord/")
    assert "Billing question" in page.locator("#result_list").inner_text()
    assert page.evaluate("document.documentElement.scrollWidth") <= 1366
    results = page.locator("#changelist .results")
    assert results.evaluate("(box) => box.scrollWidth <= box.clientWidth")  # nothing cut off
    screenshot(page, "39-admin-audit-log-1366", full_page=False)


def test_the_admin_s_redaction_confirmation_shows_the_text_first(
    browser: Any,
    live_server: Any,
    team: Any,
) -> None:
    report = _reported_secret(team)
    User.objects.filter(pk=team.owner.pk).update(is_staff=True)
    page = open_page(browser, live_server, team.owner, viewport={"width": 1366, "height": 768})
    page.goto(f"{live_server.url}/admin/transcripts/message/?q={report.message_id}")
    page.locator(f"input[name=_selected_action][value='{report.message_id}']").check()
    page.locator("select[name=action]").select_option("redact")
    page.locator("button[name=index]").first.click()
    erased = page.locator(".erased-preview")
    erased.wait_for()
    assert CARD in erased.inner_text() and "cannot be undone" in page.content()
    assert page.evaluate("document.documentElement.scrollWidth") <= 1366
    screenshot(page, "40-admin-redact-confirm", full_page=False)
    page.locator("#confirmed_reason").fill("a full card number")
    page.get_by_role("button", name="Yes, I'm sure").click()
    page.get_by_text("Redacted 1 message.").wait_for()
    assert CARD not in str(Message.objects.get(pk=report.message_id).parts)
