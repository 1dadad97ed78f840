"""Golden files for rendered pages: a normaliser for what changes from run to run (ids, times,
tokens, timings) and a snapshot check that prints a unified diff.

Only what a clock or a random generator decides is replaced; every other byte is kept, so a
page that renders differently (a word, an attribute, the order of rows) no longer matches.
"""

from __future__ import annotations

import base64
import binascii
import difflib
import json
import os
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

UPDATE_ENV = "UPDATE_SNAPSHOTS"
DIFF_LINES = 40

_ID = re.compile(
    r"(?<![0-9A-Za-z])(?:[0-7][0-9A-HJKMNP-TV-Z]{25}|[0-7][0-9A-HJKMNP-TV-Z]{9}…"
    r"|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})(?![0-9A-Za-z])"
)
_CURSOR = re.compile(r'(cursor=|"nextCursor": ")([A-Za-z0-9_-]{8,})')
_CSRF = re.compile(r'(csrfmiddlewaretoken" value="|X-CSRFToken"\s*:\s*")[A-Za-z0-9]+')
_MOMENT = re.compile(
    r"(?<![0-9])(\d{4})-(\d{2})-(\d{2})"
    r"(?:([T ])(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6}))?)?(Z|[+-]\d{2}:\d{2}| UTC)?)?(?![0-9])"
)
# Django's "M j, H:i" and "M j, Y H:i": "Nov 27, 07:33", "Nov 27, 2026 07:33".
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_HUMAN_MOMENT = re.compile(
    rf"\b({'|'.join(_MONTHS)}) (\d{{1,2}}), (?:(\d{{4}}) )?(\d{{2}}):(\d{{2}})\b"
)
# The Django admin's "N j, Y, P": "Nov. 27, 2026, 7:38 a.m.", "Sept. 3, 2026, noon".
_ADMIN_MONTHS = (
    *("Jan.", "Feb.", "March", "April", "May", "June"),
    *("July", "Aug.", "Sept.", "Oct.", "Nov.", "Dec."),
)
_ADMIN_MOMENT = re.compile(
    rf"({'|'.join(re.escape(m) for m in _ADMIN_MONTHS)}) (\d{{1,2}}), (\d{{4}}), "
    r"(?:(\d{1,2})(?::(\d{2}))? ([ap])\.m\.|(noon|midnight))"
)
# The admin's date filters ("Today", "Past 7 days", "This month") link to days counted from
# today: the bounds of those links are the calendar's.
_DATE_FILTER = re.compile(r"(__(?:gte|lt)=)\d{4}-\d{2}-\d{2}(?=\+00%3A00%3A00%2B00%3A00)")
_AGO = re.compile(r"\bjust now\b|\b\d+ (?:minute|hour|day|month|year)s? ago\b")
# A duration shown as text: "11 ms", "0.002 s", "+0.002s", "2 min 5 s", "&lt;1 ms".
_DURATION = re.compile(r"(?<=[>+ ])(?:&lt;)?(?:\d+ min )?\d+(?:\.\d+)? ?(?:ms|s)(?![\w-])")
# Compare's timing rows: whether two runs' timings differ (and by how much) is the clock's.
_TIMING_METRIC = re.compile(
    r'<div class="metric(?: differs)?"><dt>(First token|Duration)</dt><dd>[^<]*'
    r'(?: <span class="delta">[^<]*</span>)?</dd></div>'
)
# The waterfall bars: their offset and width are the run's measured timings.
_BAR = re.compile(r'(<rect x=")[\d.]+(" y="0" width=")[\d.]+(")')
_STATIC_HASH = re.compile(r"(/static/[^\"' ]+?)\.[0-9a-f]{12}(\.[a-z0-9]+)")


def _expand_cursor(match: re.Match[str]) -> str:
    """A paging cursor is base64 of JSON (a time, an id): show that JSON so it is normalised
    like the rest of the page (an undecodable one is kept as it is)."""
    text = match.group(2)
    try:
        decoded = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode()
        json.loads(decoded)
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return match.group(0)
    return f"{match.group(1)}cursor({decoded})"


@dataclass
class Normaliser:
    """Replaces what differs between two renderings of the same data.

    Ids (ULIDs, UUIDs) become <id1>, <id2>… in order of first appearance; moments that fall in
    [start, end] (when the data was written and read) become <time>/<date>, while fixed dates
    written in the data itself are kept; relative times, durations, CSRF tokens and the given
    secrets become placeholders.
    """

    start: datetime
    end: datetime
    secrets: dict[str, str] = field(default_factory=dict)

    def normalise(self, text: str) -> str:
        """text with every run-dependent value replaced by its placeholder."""
        for secret, name in self.secrets.items():
            text = text.replace(secret, f"<{name}>")
        text = _CURSOR.sub(_expand_cursor, text)
        text = _CSRF.sub(r"\1<csrf>", text)
        text = _MOMENT.sub(self._moment, text)
        text = _HUMAN_MOMENT.sub(self._human_moment, text)
        text = _ADMIN_MOMENT.sub(self._admin_moment, text)
        text = _DATE_FILTER.sub(r"\1<day>", text)
        text = _AGO.sub("<ago>", text)
        text = _TIMING_METRIC.sub(
            r'<div class="metric<timing>"><dt>\1</dt><dd><duration></dd></div>', text
        )
        text = _DURATION.sub("<duration>", text)
        text = _BAR.sub(r"\1<x>\2<w>\3", text)
        text = _STATIC_HASH.sub(r"\1.<hash>\2", text)
        return self._ids(text)

    def _ids(self, text: str) -> str:
        names: dict[str, str] = {}

        def name(match: re.Match[str]) -> str:
            key = match.group(0).upper().replace("-", "")
            if match.group(0).endswith("…"):  # a shortened id: the name of the id it begins
                prefix = key[:-1]
                key = next((k for k in names if k.startswith(prefix)), prefix)
                return names.setdefault(key, f"<id{len(names) + 1}>") + "…"
            return names.setdefault(key, f"<id{len(names) + 1}>")

        return _ID.sub(name, text)

    def _moment(self, match: re.Match[str]) -> str:
        year, month, day, sep, hour, minute, second = match.groups()[:7]
        # The shown precision: a moment without seconds covers its whole minute, a date its day.
        span = timedelta(days=1) if sep is None else timedelta(seconds=1 if second else 60)
        parts = (year, month, day, hour or 0, minute or 0, second or 0)
        if not self._recent(parts, span):
            return match.group(0)
        return "<date>" if sep is None else "<time>"

    def _human_moment(self, match: re.Match[str]) -> str:
        month, day, year, hour, minute = match.groups()
        month_number = _MONTHS.index(month) + 1
        years = {year} if year else {self.start.year, self.end.year}
        minute_long = timedelta(minutes=1)
        if any(self._recent((y, month_number, day, hour, minute, 0), minute_long) for y in years):
            return "<time>"
        return match.group(0)

    def _admin_moment(self, match: re.Match[str]) -> str:
        month, day, year, hour, minute, half, word = match.groups()
        if word:
            hour_of_day = 12 if word == "noon" else 0
        else:
            hour_of_day = int(hour) % 12 + (12 if half == "p" else 0)
        parts = (year, _ADMIN_MONTHS.index(month) + 1, day, hour_of_day, minute or 0, 0)
        return "<time>" if self._recent(parts, timedelta(minutes=1)) else match.group(0)

    def _recent(
        self,
        parts: tuple[str | int, ...],
        span: timedelta,
    ) -> bool:
        """Whether the moment of parts (year … second, in UTC), shown to the precision span,
        may be one of this run's: it overlaps [start, end] (a second's leeway each side)."""
        try:
            year, month, day, hour, minute, second = (int(p) for p in parts)
            moment = datetime(year, month, day, hour, minute, second, tzinfo=UTC)
        except ValueError:
            return False
        leeway = timedelta(seconds=1)
        return self.start - leeway < moment + span and moment <= self.end + leeway


@dataclass(frozen=True)
class Response:
    """What a snapshot records of one response: status, content type, the headers that say
    where to go or what file it is, and the normalised body."""

    status: int
    content_type: str
    headers: tuple[tuple[str, str], ...]
    body: str

    def text(self) -> str:
        """The snapshot file's text."""
        head = "".join(f"{name}: {value}\n" for name, value in self.headers)
        return f"{self.status} {self.content_type}\n{head}{self.body}"


def json_body(raw: str) -> str:
    """A JSON body, one value a line (key order kept), after a line saying whether the raw
    bytes were Python's default json.dumps layout, so a change of layout is seen too."""
    value = json.loads(raw)
    layout = "default" if json.dumps(value) == raw else "other"
    return f"json-layout: {layout}\n{json.dumps(value, indent=1, ensure_ascii=False)}\n"


def updating() -> bool:
    """Whether this run records the snapshots (UPDATE_SNAPSHOTS=1) instead of checking them."""
    return os.environ.get(UPDATE_ENV) == "1"


def difference(name: str, expected: str, actual: str) -> str | None:
    """None when the texts are equal, else a unified diff of their first differing lines."""
    if expected == actual:
        return None
    diff = difflib.unified_diff(
        expected.splitlines(),
        actual.splitlines(),
        fromfile=f"{name} (snapshot)",
        tofile=f"{name} (now)",
        lineterm="",
    )
    return "\n".join(list(diff)[: DIFF_LINES + 3])


def check_snapshot(path: Path, actual: str) -> str | None:
    """None when the snapshot at path holds actual (written there when updating), else what
    differs."""
    if updating():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8")
        return None
    if not path.exists():
        return f"{path.name}: no snapshot (record it with {UPDATE_ENV}=1)"
    return difference(path.name, path.read_text(encoding="utf-8"), actual)
