"""Production mode in Chromium: every screen works under the Content-Security-Policy."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User

from tests.base import PASSWORD
from tests.browser import ARTIFACTS, BROWSER_TESTS
from tests.factories import events, make_thread
from tests.production.conftest import production_env, serving
from transcripts import ledger
from transcripts.demo import load_demo
from transcripts.models import Run, Thread

pytestmark = BROWSER_TESTS

# Runs in every document before its own scripts; Playwright's injection is not subject to CSP.
WATCH_VIOLATIONS = """
document.addEventListener("securitypolicyviolation", (e) => window.reportViolation(
  `${location.pathname}: ${e.violatedDirective} blocked ${e.blockedURI || "inline"}`
  + ` (${e.sourceFile}:${e.lineNumber})`));
"""


class Problems:
    """What the browser reported while the pages were used: CSP violations and script errors."""

    def __init__(self, page: Any) -> None:
        self.found: list[str] = []
        page.context.expose_function("reportViolation", self.violation)
        page.context.add_init_script(WATCH_VIOLATIONS)
        page.on("console", self.console)
        page.on("pageerror", lambda error: self.found.append(f"script error: {error}"))

    def violation(self, description: str) -> None:
        self.found.append(description)

    def console(self, message: Any) -> None:
        if "Content Security Policy" in message.text or "htmx:" in message.text:
            self.found.append(f"console {message.type}: {message.text}")


def _shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"production-{name}.png"), full_page=True)


def test_every_screen_works_under_the_content_security_policy(browser: Any) -> None:
    load_demo()
    User.objects.create_superuser("root", "root@localhost", PASSWORD)
    haiku = Thread.objects.get(title__startswith="Haiku")
    weather_run = Run.objects.filter(thread__title__startswith="Weather").order_by("-id").first()
    assert weather_run is not None
    streaming = make_thread("Streaming now")
    open_run, _ = ledger.begin_run(thread=streaming, model="live-model")
    ledger.append_events(run=open_run, events=events(("message-start", {"role": "assistant"})))

    with serving(production_env(TRANSCRIPTS_HTTPS="0")) as url:
        context = browser.new_context(viewport={"width": 1180, "height": 900})
        page = context.new_page()
        page.set_default_timeout(10_000)
        problems = Problems(page)

        # Log in through the form: the CSRF cookie is HttpOnly, the token travels in the form.
        page.goto(url + "/")
        page.fill("#id_username", "root")
        page.fill("#id_password", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_selector(f"a[href='/t/{haiku.id}/']")
        # htmx's indicator style comes from app.css, not from a <style> it injects.
        assert page.locator("head style").count() == 0
        assert (
            page.locator(".htmx-indicator").count() == 0
            or page.evaluate("getComputedStyle(document.querySelector('.htmx-indicator')).opacity")
            == "0"
        )
        _shot(page, "01-thread-list")

        page.click(f"a[href='/t/{haiku.id}/']")
        answer = page.locator("article.msg.role-assistant").first
        answer.wait_for()
        # The generation popover opens and closes.
        answer.locator("details.gen-pop > summary").click()
        answer.locator("details.gen-pop[open] form.gen-form").wait_for()
        answer.locator("details.gen-pop > summary").click()
        answer.locator("details.gen-pop[open]").wait_for(state="detached")
        # The report form opens in place and its menu closes (a listener, not hx-on) ...
        answer.locator("details.msg-menu summary").click()
        answer.get_by_text("Report message…").click()
        answer.locator(".report-slot form.report-form").wait_for()
        assert answer.locator("details.msg-menu").evaluate("menu => menu.open") is False
        _shot(page, "02-report-form")
        # ... and Cancel removes it without leaving the page.
        here = page.url
        answer.locator("a.report-cancel").click()
        answer.locator("form.report-form").wait_for(state="detached")
        assert page.url == here

        # The branch switcher swaps the conversation in place.
        page.locator("article.msg.role-user a.sib-prev").click()
        page.wait_for_selector(".branch-banner")
        assert "leaf=" in page.url
        _shot(page, "03-branch")

        page.locator("a.sib-compare").first.click()
        page.wait_for_selector("#compare article.col")
        assert page.locator("#compare article.col").count() >= 2
        _shot(page, "04-compare")

        page.goto(f"{url}/t/{haiku.id}/tree/")
        rows = page.locator(".tree-row")
        assert rows.count() >= 5
        # The stylesheet marks the active branch's rail without a style attribute.
        rail = page.locator(".tree-row.is-active > a").first.evaluate(
            "link => getComputedStyle(link).borderLeftWidth"
        )
        assert rail == "3px", rail
        widths = page.locator(".tree-row svg.rolebar").first.evaluate(
            "bar => [...bar.querySelectorAll('rect')].map(r => r.getBoundingClientRect().width)"
        )
        assert widths and abs(sum(widths) - 44) < 0.5, widths
        _shot(page, "05-tree")

        page.goto(f"{url}/runs/{weather_run.id}/")
        page.locator(".waterfall .trace-bar").first.wait_for()
        page.locator(".raw-log > summary").click()
        page.locator("details.event").nth(1).locator("summary").click()
        _shot(page, "06-run")

        # A streaming run's page follows it over SSE (connect-src 'self').
        page.goto(f"{url}/runs/{open_run.id}/")
        page.wait_for_selector("[sse-connect]", state="attached")
        page.wait_for_timeout(500)  # the EventSource connects
        ledger.append_events(run=open_run, events=events(("text-delta", {"delta": "hi"}), start=2))
        page.locator("#live .tseg-of-text").wait_for()

        page.goto(url + "/api/v1/docs")
        page.locator(".swagger-ui .opblock").first.wait_for()
        page.locator(".swagger-ui .opblock-summary").first.click()
        page.locator(".swagger-ui .opblock-body").first.wait_for()
        _shot(page, "07-api-docs")

        page.goto(url + "/admin/")
        page.wait_for_selector("#content")
        page.goto(url + "/admin/transcripts/thread/")
        page.locator("#result_list a").first.click()
        page.wait_for_selector("#content-main")
        _shot(page, "08-admin")
        context.close()

    assert problems.found == []
