"""Template tags of the generation UI: option defaults and the open run of a conversation."""

from __future__ import annotations

from django import template

from transcripts.models import Thread
from transcripts.web.views import generation
from transcripts.web.views.browse import MessageItem

register = template.Library()


@register.simple_tag
def generation_options(thread: Thread) -> generation.Options:
    """The thread's generation choices and defaults (its last choice), or why it refuses."""
    return generation.options_for(thread)


@register.simple_tag
def open_run(thread: Thread, items: list[MessageItem]) -> generation.LiveRun | None:
    """The thread's open run, placed in this window of messages, if there is one."""
    return generation.open_live_run(thread, items)
