"""Reporting a message (any member who reads the thread), and the moderation queue where the
moderators of each project resolve or dismiss its reports."""

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
from transcripts.models import Report, ReportStatus
from transcripts.web.access import (
    get_message_for_user,
    get_report_for_moderator,
    login_required,
    moderated_project_ids,
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
    reports = selectors.report_queue("" if status == "all" else status, project_ids=moderated)
    page = list(reports[offset : offset + REPORTS_PER_PAGE + 1])
    more = len(page) > REPORTS_PER_PAGE
    context = {
        "rows": report_rows(page[:REPORTS_PER_PAGE]),
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
        tab = request.POST.get("tab", "open")
        moderated = moderated_project_ids(request)
        context = {
            "row": report_rows([selectors.report_queue().get(pk=report.pk)])[0],
            "error": error,
            "here": request.POST.get("next", ""),
            "status": tab if tab in dict(STATUSES) else "open",
            "tabs": queue_tabs(moderated),
            "several_projects": moderated is None or len(moderated) > 1,
            "oob": True,
        }
        return render(request, "transcripts/moderation_queue.html#closed", context)
    if error:
        messages.error(request, f"Report {report.pk}: {error}")
    else:
        messages.success(request, f"Report {report.pk} {report.status}.")
    back = request.POST.get("next", "")
    if not back.startswith("/moderation/"):
        back = reverse("moderation_queue")
    return HttpResponseRedirect(back, status=303)
