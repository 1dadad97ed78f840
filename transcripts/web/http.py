"""The request type of the pages, and the answers several screens share."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django_htmx.http import HttpResponseLocation, push_url
from django_htmx.middleware import HtmxDetails

from transcripts import selectors
from transcripts.generation.generators import EXTERNAL
from transcripts.models import Run, Thread
from transcripts.permissions import Access
from transcripts.web.presenters.runs import live_run

REFUSAL = "transcripts/refusal.html"


class HtmxHttpRequest(HttpRequest):
    """A request that went through django-htmx's middleware."""

    htmx: HtmxDetails


def safe_next(request: HttpRequest, default: str) -> str:
    """The POSTed `next` address when it stays on this site, else default."""
    target = request.POST.get("next", "")
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return default


def refusal(request: HttpRequest, message: str, status: int) -> HttpResponse:
    """Nothing was done, and why: a page, or for htmx a fragment its form shows."""
    back = request.headers.get("Referer", "")
    if not url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}):
        back = ""
    context = {"refusal": message, "status": status, "back_url": back}
    if not getattr(request, "htmx", False):
        return render(request, REFUSAL, context, status=status)
    response = render(request, f"{REFUSAL}#refusal", context, status=status)
    response["X-Refusal"] = "1"  # app.js swaps these into the form despite the status
    return push_url(response, False)  # a refusal is no page to go back to


def to_conversation(
    request: HtmxHttpRequest, thread_id: str, leaf: str | None = None
) -> HttpResponse:
    """Back to the conversation (at leaf); htmx swaps it in place instead of reloading."""
    url = reverse("conversation", args=[thread_id])
    if leaf:
        url += f"?leaf={leaf}"
    if request.htmx:
        return HttpResponseLocation(url, target="#conversation", swap="outerHTML")
    return HttpResponseRedirect(url)


def render_live_block(
    request: HtmxHttpRequest, run: Run, thread: Thread, access: Access
) -> HttpResponse:
    """The live block's body of a run (its projection so far, its status and the actions the
    user's access allows)."""
    facts = selectors.live_run_facts(run, thread, worker_needed=run.generator != EXTERNAL)
    live = live_run(run, thread, facts, access=access)
    context = {"live": live, "thread": thread, "url": live.conversation_url}
    return render(request, "transcripts/generation.html#live-body", context)
