"""Browser tests of reporting and the moderation queue: Playwright with Debian's Chromium."""

from __future__ import annotations

from typing import Any

from tests.web.test_browser import _page, _shot, browser, pytestmark  # noqa: F401
from transcripts.demo import load_demo
from transcripts.models import AuditRecord, Report, ReportStatus, Thread


def test_a_viewer_reports_a_message_and_a_moderator_resolves_it(
    browser: Any,  # noqa: F811
    live_server: Any,
    viewer: Any,
    moderator: Any,
) -> None:
    load_demo()
    thread = Thread.objects.get(title__startswith="Weather")
    page = _page(browser, live_server, viewer)
    page.goto(f"{live_server.url}/t/{thread.id}/")
    answer = page.locator("article.msg.role-assistant").last
    answer.locator(".msg-menu summary").click()
    answer.get_by_role("link", name="Report message…").click()
    form = answer.locator("form.report-form")
    form.wait_for()
    form.locator("select[name=reason]").select_option("incorrect")
    form.locator("textarea[name=note]").fill("The forecast says rain until 08:00")
    _shot(page, "30-report-form", full_page=False)
    form.get_by_role("button", name="Send report").click()
    answer.locator(".report-done").wait_for()
    report = Report.objects.get()
    assert (report.reason, report.reporter_id) == ("incorrect", viewer.pk)

    page = _page(browser, live_server, moderator)
    page.goto(live_server.url + "/")
    page.get_by_role("link", name="Moderation").click()
    row = page.locator(f"#report-{report.pk}")
    assert "The forecast says rain until 08:00" in row.inner_text()
    assert "Factually incorrect" in row.inner_text()
    _shot(page, "31-moderation-queue")
    row.locator("input[name=note]").fill("checked: the answer is right")
    row.get_by_role("button", name="Resolve").click()
    page.locator(f"#report-{report.pk}.st-resolved").wait_for()
    report.refresh_from_db()
    assert report.status == ReportStatus.RESOLVED and report.resolved_by == moderator
    assert AuditRecord.objects.filter(action="resolve_report").exists()
    _shot(page, "32-report-resolved")
    page.get_by_role("link", name="Resolved").click()
    page.wait_for_url("**/moderation/?status=resolved")
    assert page.locator(f"#report-{report.pk}").is_visible()


def test_the_report_form_and_the_queue_work_at_360_pixels(
    browser: Any,  # noqa: F811
    live_server: Any,
    viewer: Any,
    moderator: Any,
) -> None:
    load_demo()
    thread = Thread.objects.get(title__startswith="Planner")
    page = _page(browser, live_server, viewer, viewport={"width": 360, "height": 780})
    page.goto(f"{live_server.url}/t/{thread.id}/")
    answer = page.locator("article.msg.role-assistant").first
    answer.locator(".msg-menu summary").click()
    answer.get_by_role("link", name="Report message…").click()
    answer.locator("form.report-form").wait_for()
    assert page.evaluate("document.documentElement.scrollWidth") <= 360
    _shot(page, "33-report-form-narrow", full_page=False)
    answer.locator("select[name=reason]").select_option("harmful")
    answer.get_by_role("button", name="Send report").click()
    answer.locator(".report-done").wait_for()
    page = _page(browser, live_server, moderator, viewport={"width": 360, "height": 780})
    page.goto(f"{live_server.url}/moderation/")
    assert page.locator(".report-row").count() == 1
    assert page.evaluate("document.documentElement.scrollWidth") <= 360
    _shot(page, "34-moderation-queue-narrow")
