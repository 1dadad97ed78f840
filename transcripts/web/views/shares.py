"""Share links: the panel of a thread's links (editors create, list and revoke them) and the
public page a link opens, without login.

The public page is the one page outside `login_required`: who holds the link may read exactly
its branch, and nothing else of the app. Every way a link can fail (unknown, revoked, expired,
its thread hidden or deleted) answers the same 404, so the page never says why.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

from django import forms
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from transcripts import ledger, selectors
from transcripts.errors import DomainError
from transcripts.models import Message, Thread
from transcripts.permissions import Access, Role
from transcripts.web.access import get_thread_for_user, login_required, message_of, require_role
from transcripts.web.http import HtmxHttpRequest
from transcripts.web.presenters.shares import (
    LEAF_PREVIEW_CHARS,
    share_rows,
    shared_page,
    shared_start,
)

PANEL = "transcripts/shares.html"
SHARED = "transcripts/shared.html"
GONE = "transcripts/shared.html#gone"
# A shared page is for the people given the link: not for search engines, nor for the sites
# its links lead to, nor for caches on the way.
PRIVATE_HEADERS = {
    "X-Robots-Tag": "noindex, nofollow",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
EXPIRY_CHOICES = [("", "Never"), ("1", "In 1 day"), ("7", "In 7 days"), ("30", "In 30 days")]
SHOWN_LINKS = 50  # links listed in the panel, newest first
SHARED_WINDOW = 50  # messages of a shared branch per page, as the conversation sends its own


class ShareForm(forms.Form):
    """A new link: the branch's last message and when the link stops working."""

    leaf = forms.CharField(max_length=26)
    expires = forms.ChoiceField(choices=EXPIRY_CHOICES, required=False)


def _private(response: HttpResponse) -> HttpResponse:
    """response, marked as a page for the link's holders only (PRIVATE_HEADERS)."""
    for header, value in PRIVATE_HEADERS.items():
        response[header] = value
    return response


@require_safe
def shared(request: HttpRequest, secret: str) -> HttpResponse:
    """The branch a link shares, read-only; the same 404 for every link that does not work."""
    share = selectors.resolve_share(secret)
    if share is None:
        return _private(render(request, GONE, status=404))
    try:
        start = int(request.GET.get("start", "0"))
    except ValueError:
        start = 0  # a mangled pager link still opens the branch, from its start
    start = shared_start(share, start=start, size=SHARED_WINDOW)
    messages = selectors.shared_path(share, start=start, limit=SHARED_WINDOW)
    page = shared_page(share, messages, start=start, size=SHARED_WINDOW)
    return _private(render(request, SHARED, {"thread": share.thread, "page": page}))


def _leaf_asked(request: HtmxHttpRequest) -> str:
    """The leaf of the branch being read: ?leaf=, else that of the page htmx is on (the
    reader may have switched branches since the Share button was drawn)."""
    leaf = request.GET.get("leaf", "")
    if leaf or not request.htmx or not request.htmx.current_url:
        return leaf
    return parse_qs(urlsplit(request.htmx.current_url).query).get("leaf", [""])[0]


def _branch_end(thread: Thread, leaf_id: str) -> Message | None:
    """The last message of the branch the conversation shows for leaf_id: below an
    alternative, its most recent continuation (as the page follows it); else the head."""
    if leaf_id:
        anchor = message_of(thread, leaf_id)
        if not anchor.active:
            return message_of(thread, selectors.latest_leaf_below(anchor.id))
    if thread.head is None:
        return None
    return message_of(thread, thread.head.id)


def _editor_thread(request: HtmxHttpRequest, thread_id: str) -> tuple[Thread, Access]:
    thread, access = get_thread_for_user(request, thread_id)
    require_role(access, Role.EDITOR, "share this thread")
    return thread, access


def _panel(
    request: HtmxHttpRequest, thread: Thread, leaf: Message | None, status: int = 200, **extra: Any
) -> HttpResponse:
    shares = selectors.latest_shares(thread, SHOWN_LINKS)
    previews = selectors.message_previews([s.leaf_id for s in shares], LEAF_PREVIEW_CHARS)
    conversation_url = reverse("conversation", args=[thread.id])
    context = {
        "thread": thread,
        "leaf": leaf,
        "leaf_preview": selectors.message_previews([leaf.id]).get(leaf.id, "") if leaf else "",
        "rows": share_rows(shares, previews),
        "expiry_choices": EXPIRY_CHOICES,
        "panel_url": reverse("thread_shares", args=[thread.id]),
        "back_url": conversation_url + (f"?leaf={leaf.id}" if leaf and not leaf.active else ""),
        **extra,
    }
    template = f"{PANEL}#panel" if request.htmx else PANEL
    return render(request, template, context, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def thread_shares(request: HtmxHttpRequest, thread_id: str) -> HttpResponse:
    """The thread's links and a form for a new one (an editor's); POST creates it and shows
    its address this once."""
    thread, _ = _editor_thread(request, thread_id)
    if request.method == "GET":
        return _panel(request, thread, _branch_end(thread, _leaf_asked(request)))
    form = ShareForm(request.POST)
    if not form.is_valid():
        return _panel(request, thread, None, status=422, error="Choose a branch and an expiry.")
    leaf = message_of(thread, form.cleaned_data["leaf"])
    days = form.cleaned_data["expires"]
    expires_at = timezone.now() + timedelta(days=int(days)) if days else None
    try:
        _, secret = ledger.create_share(
            thread=thread, user=request.user, leaf_id=leaf.id, expires_at=expires_at
        )
    except DomainError as exc:
        return _panel(request, thread, leaf, status=exc.status, error=exc.message)
    new_url = request.build_absolute_uri(reverse("shared", args=[secret]))
    return _panel(request, thread, leaf, status=201, new_url=new_url)


@login_required
@require_POST
def revoke(request: HtmxHttpRequest, thread_id: str, share_id: str) -> HttpResponse:
    """Revoke one of the thread's links (an editor's): its page is a 404 from now on."""
    thread, _ = _editor_thread(request, thread_id)
    share = selectors.share_by_id(share_id)
    if share is None or share.thread_id != thread.id:
        raise Http404("no such link")
    ledger.revoke_share(share=share, user=request.user)
    if request.htmx:
        leaf = message_of(thread, request.POST["leaf"]) if request.POST.get("leaf") else None
        return _panel(request, thread, leaf, revoked=share.id)
    return HttpResponseRedirect(reverse("thread_shares", args=[thread.id]), status=303)
