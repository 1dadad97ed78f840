"""Dates on pages: `{% moment %}` shows the year only when it is not this year, keeps relative
times where a page shows them, and puts the exact UTC time on hover (issue 26)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.template import Context, Template
from django.test import Client
from django.utils import timezone

from tests.factories import conversation
from transcripts.models import Message, Thread

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"


def _render(when: datetime | None, relative: bool = False) -> str:
    source = "{% load relative_times %}{% moment when relative=rel %}"
    return Template(source).render(Context({"when": when, "rel": relative}))


def _last_year() -> datetime:
    return datetime(timezone.now().year - 1, 11, 27, 14, 3, 5, tzinfo=UTC)


def _this_year() -> datetime:
    return datetime(timezone.now().year, 1, 1, 0, 0, 7, tzinfo=UTC)


def test_a_date_of_another_year_carries_its_year() -> None:
    year = timezone.now().year - 1
    assert _render(_last_year()) == (
        f'<time datetime="{year}-11-27T14:03:05Z" title="{year}-11-27 14:03:05 UTC">'
        f"Nov 27, {year} 14:03</time>"
    )


def test_a_date_of_this_year_leaves_the_year_out() -> None:
    year = timezone.now().year
    assert _render(_this_year()) == (
        f'<time datetime="{year}-01-01T00:00:07Z" title="{year}-01-01 00:00:07 UTC">'
        "Jan 1, 00:00</time>"
    )


def test_a_relative_time_keeps_the_exact_time_on_hover() -> None:
    year = timezone.now().year - 1
    rendered = _render(_last_year(), relative=True)
    assert re.fullmatch(
        rf'<time datetime="{year}-11-27T14:03:05Z" title="{year}-11-27 14:03:05 UTC">'
        r"\d+ (year|month)s? ago</time>",
        rendered,
    ), rendered
    recent = timezone.now() - timedelta(hours=3)
    assert ">3 hours ago</time>" in _render(recent, relative=True)


def test_the_datetime_value_stops_at_milliseconds() -> None:
    when = datetime(2024, 2, 29, 23, 59, 58, 123456, tzinfo=UTC)
    assert _render(when).startswith('<time datetime="2024-02-29T23:59:58.123Z"')


def test_no_moment_renders_nothing() -> None:
    assert _render(None) == ""


def test_no_template_formats_a_date_itself() -> None:
    """Every date on a page goes through {% moment %}: none is formatted with |date or |ago."""
    offenders = [
        f"{path.relative_to(TEMPLATES)}:{number}"
        for path in sorted(TEMPLATES.rglob("*.html"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"\|date:|\|ago\b|naturaltime|timesince", line)
    ]
    assert offenders == []


@pytest.mark.django_db
def test_the_thread_list_and_conversation_show_last_years_dates(viewer_client: Client) -> None:
    thread = conversation(1, title="Old talk")
    moment = _last_year()
    Thread.objects.filter(id=thread.id).update(updated_at=moment)
    Message.objects.filter(thread=thread).update(created_at=moment)
    iso, exact = moment.isoformat().replace("+00:00", "Z"), f"{moment.year}-11-27 14:03:05 UTC"

    listing = viewer_client.get("/").content.decode()
    relative = rf'<time datetime="{iso}" title="{exact}">\d+ (year|month)s? ago</time>'
    assert re.search(relative, listing)

    page = viewer_client.get(f"/t/{thread.id}/").content.decode()
    assert f'<time datetime="{iso}" title="{exact}">Nov 27, {moment.year} 14:03</time>' in page
