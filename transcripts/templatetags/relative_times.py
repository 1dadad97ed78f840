"""Times on pages: `{% moment when %}` (a `<time>` element, short, the exact UTC time on hover)
and `{{ when|ago }}` (a time in words: "just now", "5 minutes ago", by transcripts.times)."""

from __future__ import annotations

from datetime import UTC, datetime

from django import template
from django.utils import timezone
from django.utils.dateformat import format as date_format
from django.utils.html import format_html
from django.utils.safestring import SafeString

from transcripts.times import relative_time

register = template.Library()

THIS_YEAR = "M j, H:i"
OTHER_YEAR = "M j, Y H:i"
EXACT = "Y-m-d H:i:s"
TIME = '<time datetime="{}" title="{}">{}</time>'


@register.filter
def ago(moment: datetime | None) -> str:
    """How long ago moment was, in words ('' for no moment)."""
    return relative_time(moment) if moment is not None else ""


def short_moment(moment: datetime, now: datetime) -> str:
    """'Nov 27, 14:03' in now's year, 'Nov 27, 2025 14:03' in any other (in the site's zone)."""
    local = timezone.localtime(moment)
    same_year = local.year == timezone.localtime(now).year
    return date_format(local, THIS_YEAR if same_year else OTHER_YEAR)


def html_datetime(moment: datetime) -> str:
    """moment as an HTML `datetime` value: UTC, ending in Z, to the millisecond at most (HTML
    allows no finer fraction)."""
    utc = moment.astimezone(UTC)
    precision = "milliseconds" if utc.microsecond else "seconds"
    return utc.isoformat(timespec=precision).replace("+00:00", "Z")


@register.simple_tag
def moment(when: datetime | None, relative: bool = False) -> SafeString:
    """A `<time>` for when: its ISO 8601 UTC value in `datetime`, the exact UTC time in `title`
    (shown on hover), and as text the short date, or with relative=True the time in words.
    No moment renders nothing; a naive one is taken as UTC."""
    if when is None:
        return SafeString("")
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    now = timezone.now()
    shown = relative_time(when, now) if relative else short_moment(when, now)
    exact = date_format(timezone.localtime(when, UTC), EXACT) + " UTC"
    return format_html(TIME, html_datetime(when), exact, shown)
