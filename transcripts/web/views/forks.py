"""New thread from here: a message's branch, from the root to it, copied into a new thread.

A plain form POST from the message's More actions menu (editors), answered with a redirect to
the new thread; refusals (a role too low, a hidden thread) are a page with their status.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from transcripts.ledger.fork_thread import fork_thread
from transcripts.permissions import Role
from transcripts.web.access import get_message_for_user, login_required, require_role
from transcripts.web.http import HtmxHttpRequest


@login_required
@require_POST
def fork(request: HtmxHttpRequest, thread_id: str, message_id: str) -> HttpResponse:
    """Start a new thread from the message and open it."""
    message, access = get_message_for_user(request, thread_id, message_id)
    require_role(access, Role.EDITOR, "start a new thread from a message")
    thread = fork_thread(message=message, user=request.user)
    messages.success(request, "New thread started: it holds the branch up to that message.")
    return HttpResponseRedirect(reverse("conversation", args=[thread.id]))
