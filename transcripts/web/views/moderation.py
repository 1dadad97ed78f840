"""Reporting a message (any member who reads the thread), and the moderation queue where the
moderators of each project act on its reports (hide or lock the thread, flag the message, and
for admins redact it after reading what it erases), resolving them in the same step, or resolve
and dismiss them."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.http import HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from transcripts import selectors
from transcripts.errors import DomainError
from transcripts.ledger import moderation
from transcripts.ledger.moderation_actions import (
    already_message,
    done_message,
    redaction_preview,
)
from transcripts.models import Report, ReportStatus
from transcripts.permissions import Role, project_ids, thread_access
from transcripts.web.access import (
    get_message_for_user,
    get_report_for_moderator,
    login_required,
    moderated_project_ids,
    require_role,
)
from transcripts.web.http import HtmxHttpRequest
from transcripts.web.presenters.moderation import STATUSES, queue_tabs, report_rows

REPORTS_PER_PAGE = 50


class ReportForm(forms.Form):
    """A viewer's report: why, and optionally more words."""

    reason = forms.ChoiceField(choices=Report.REASONS)
    note = forms.CharField(
        required=False,
        max_length=2000,
        widget=forms.Textarea(attrs={"rows": 3, "placeholder": "What is wrong (optional)"}),
    )


class CloseForm(forms.Form):
    """A moderator's decision on a report."""

    status = forms.ChoiceField(
        choices=[(ReportStatus.RESOLVED, "Resolve"), (ReportStatus.DISMISSED, "Dismiss")]
    )
    note = forms.CharField(required=False, max_length=2000)


def _direct_actions() -> list[tuple[str, str]]:
    """The report actions a row's buttons take at once (redaction asks first: `redact`)."""
    return [(a.name, a.name) for a in moderation.report_actions() if not a.confirm]


class ActForm(forms.Form):
    """A moderator's action from a report: what, why, and whether it resolves the report."""

    action = forms.ChoiceField(choices=_direct_actions)
    reason = forms.CharField(required=False, max_length=2000)
    resolve = forms.BooleanField(required=False)


class RedactForm(forms.Form):
    """An admin's confirmed redaction from a report: why, and whether it resolves the report."""

    reason = forms.CharField(max_length=2000)
    resolve = forms.BooleanField(required=False)


@login_required
@require_http_methods(["GET", "POST"])
def report(request: HtmxHttpRequest, thread_id: str, message_id: str) -> HttpResponse:
    """Report a message to the moderators (a form; inline in the conversation with htmx)."""
    message, _ = get_message_for_user(request, thread_id, message_id)
    thread = message.thread
    back = reverse("conversation", args=[thread.id]) + f"?leaf={message.id}#m-{message.id}"
    form = ReportForm(request.POST if request.method == "POST" else None)
    context: dict[str, Any] = {"thread": thread, "message": message, "form": form, "back": back}
    if request.method == "POST" and form.is_valid():
        try:
            moderation.report_message(
                user=request.user,
                message=message,
                reason=form.cleaned_data["reason"],
                note=form.cleaned_data["note"],
            )
        except DomainError as exc:
            form.add_error(None, exc.message)
        else:
            if request.htmx:
                return render(request, "transcripts/report.html#done", context)
            messages.success(request, "Thank you: the moderators will look at this message.")
            return HttpResponseRedirect(back, status=303)
    template = "transcripts/report.html"
    if request.htmx:
        template += "#form"
    return render(request, template, context)


@login_required
@require_GET
def queue(request: HtmxHttpRequest) -> HttpResponse:
    """Reports of the projects the user moderates (open first), with resolve and dismiss."""
    moderated = moderated_project_ids(request)
    status = request.GET.get("status", "open")
    if status not in dict(STATUSES):
        status = "open"
    try:
        offset = max(int(request.GET.get("offset", "0")), 0)
    except ValueError:
        offset = 0
    page = selectors.report_page(
        "" if status == "all" else status,
        project_ids=moderated,
        offset=offset,
        limit=REPORTS_PER_PAGE + 1,
    )
    more = len(page) > REPORTS_PER_PAGE
    context = {
        "rows": report_rows(page[:REPORTS_PER_PAGE], administered=_administered(request)),
        "status": status,
        "tabs": queue_tabs(moderated),
        "several_projects": moderated is None or len(moderated) > 1,
        "next_offset": offset + REPORTS_PER_PAGE if more else None,
        "here": request.get_full_path(),
    }
    template = "transcripts/moderation_queue.html"
    if request.htmx:
        template += "#rows" if offset else "#queue"
    return render(request, template, context)


@login_required
@require_POST
def close(request: HtmxHttpRequest, report_id: int) -> HttpResponse:
    """Resolve or dismiss a report (a moderator of its project)."""
    report = get_report_for_moderator(request, report_id)
    form = CloseForm(request.POST)
    error = ""
    if not form.is_valid():
        error = "Choose resolve or dismiss."
    else:
        try:
            report = moderation.close_report(
                user=request.user,
                report=report,
                status=form.cleaned_data["status"],
                note=form.cleaned_data["note"],
            )
        except DomainError as exc:
            error = exc.message
    if request.htmx:
        # The new row, and the tab counts swapped out of band.
        context = _row_context(request, report, error=error)
        return render(request, "transcripts/moderation_queue.html#closed", context)
    if error:
        messages.error(request, f"Report {report.pk}: {error}")
    else:
        action = "resolve_report" if report.status == ReportStatus.RESOLVED else "dismiss_report"
        messages.success(request, f"{moderation.ACTIONS[action].done} report {report.pk}.")
    return HttpResponseRedirect(_back(request), status=303)


@login_required
@require_POST
def act(request: HtmxHttpRequest, report_id: int) -> HttpResponse:
    """Hide, unhide, lock or unlock the report's thread, or flag or unflag its message, with
    a reason, resolving the report in the same step when asked (a moderator of its project)."""
    report = get_report_for_moderator(request, report_id)
    form = ActForm(request.POST)
    if not form.is_valid():
        return _answer(request, report, error="Choose one of the actions.")
    action = form.cleaned_data["action"]
    return _take(
        request,
        report,
        action=action,
        reason=form.cleaned_data["reason"],
        resolve=form.cleaned_data["resolve"],
    )


@login_required
@require_http_methods(["GET", "POST"])
def redact(request: HtmxHttpRequest, report_id: int) -> HttpResponse:
    """Redact the reported message (a project admin): first the text it erases and a reason,
    then, confirmed, the redaction, resolving the report in the same step when asked."""
    report = get_report_for_moderator(request, report_id)
    require_role(thread_access(request.user, report.thread), Role.ADMIN, "redact messages")
    source = request.POST if request.method == "POST" else request.GET
    form = RedactForm(source)
    error = ""
    if request.method == "POST":
        if form.is_valid() and source.get("confirmed") == "yes":
            return _take(
                request,
                report,
                action="redact",
                reason=form.cleaned_data["reason"],
                resolve=form.cleaned_data["resolve"],
            )
        error = "A reason is required: it is recorded in the audit log."
    context = _row_context(request, report, error=error)
    # The form's values come back as typed; a first visit resolves the report by default.
    context["confirm"] = {
        "preview": redaction_preview(context["row"].report.message),
        "reason": str(source.get("reason", "")).strip() or context["row"].suggested_reason,
        "resolve": "resolve" in source or (request.method == "GET" and "reason" not in source),
    }
    if request.htmx:
        return render(request, "transcripts/moderation_queue.html#row", context)
    return render(request, "transcripts/moderation_queue.html", {**context, "single": True})


def _take(
    request: HtmxHttpRequest, report: Report, *, action: str, reason: str, resolve: bool
) -> HttpResponse:
    """Act on report through the ledger, then answer with what happened."""
    try:
        outcome = moderation.act_on_report(
            user=request.user, report=report, action=action, reason=reason, resolve=resolve
        )
    except DomainError as exc:
        return _answer(request, report, error=exc.message)
    entry = moderation.ACTIONS[action]
    if not outcome.changed:
        notice = already_message(entry.words, entry.target)
        if resolve and report.status == ReportStatus.OPEN:
            notice += " The report is still open."
        return _answer(request, report, notice=notice, level=messages.INFO)
    notice = done_message(entry.words, 1, entry.target)
    if outcome.report.status == ReportStatus.RESOLVED and resolve:
        notice += f" Resolved report {report.pk}."
    return _answer(request, report, notice=notice, level=messages.SUCCESS)


def _answer(
    request: HtmxHttpRequest,
    report: Report,
    *,
    notice: str = "",
    error: str = "",
    level: int = messages.SUCCESS,
) -> HttpResponse:
    """The updated row for htmx (tab counts out of band); else back to the queue with a note."""
    if request.htmx:
        context = _row_context(request, report, error=error)
        context["notice"] = notice
        return render(request, "transcripts/moderation_queue.html#closed", context)
    if error:
        messages.error(request, f"Report {report.pk}: {error}")
    else:
        messages.add_message(request, level, notice)
    return HttpResponseRedirect(_back(request), status=303)


def _row_context(request: HtmxHttpRequest, report: Report, *, error: str = "") -> dict[str, Any]:
    """What the row of report needs, read afresh, and the tabs to swap out of band."""
    tab = request.POST.get("tab") or request.GET.get("tab") or "open"
    moderated = moderated_project_ids(request)
    row = report_rows([selectors.queued_report(report.pk)], administered=_administered(request))[0]
    return {
        "row": row,
        "error": error,
        "here": _back(request),
        "status": tab if tab in dict(STATUSES) else "open",
        "tabs": queue_tabs(moderated),
        "several_projects": moderated is None or len(moderated) > 1,
        "oob": True,
    }


def _administered(request: HtmxHttpRequest) -> list[int] | None:
    """The projects where the user may redact (None: all)."""
    return project_ids(request.user, at_least=Role.ADMIN)


def _back(request: HtmxHttpRequest) -> str:
    """The queue page the request came from (its `next`), else the queue."""
    back = request.POST.get("next") or request.GET.get("next") or ""
    return back if back.startswith("/moderation/") else reverse("moderation_queue")
