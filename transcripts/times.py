"""ISO 8601 times on the wire: one way to write them, one way to read them (pure Python)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any


def to_iso(moment: datetime | None) -> str | None:
    """UTC ISO 8601 text ending in Z (None stays None); naive times are taken as UTC."""
    if moment is None:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def epoch_ms_to_iso(ms: int) -> str:
    """ISO 8601 UTC text of a millisecond epoch timestamp."""
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat().replace("+00:00", "Z")


def epoch_to_iso(value: float) -> str:
    """ISO 8601 UTC text for epoch seconds, with milliseconds when there are any."""
    moment = datetime.fromtimestamp(value, tz=UTC)
    text = moment.isoformat(timespec="milliseconds" if moment.microsecond else "seconds")
    return text.replace("+00:00", "Z")


def parse_iso(value: Any) -> datetime | None:
    """An aware datetime for ISO 8601 text or a datetime (naive means UTC), else None."""
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            return None
    else:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def parse_iso_utc(value: Any) -> datetime | None:
    """parse_iso in UTC, or None for a time PostgreSQL cannot store (beyond years 1..9999).

    PostgreSQL refuses offsets beyond ±15:59 that Python accepts, so times are kept in UTC.
    """
    moment = parse_iso(value)
    if moment is None:
        return None
    try:
        return moment.astimezone(UTC)
    except OverflowError:
        return None


OUT_OF_RANGE = "must fall between the years 1 and 9999 in UTC"
NO_TIMEZONE = "must carry a timezone (e.g. Z)"


def storable_moment(moment: datetime) -> bool:
    """Whether moment, once in UTC, stays within years 1..9999.

    PostgreSQL would store an earlier or later moment (as a BC date, or year 10000) that
    Python cannot read back, which would break every later read of the run.
    """
    try:
        moment.astimezone(UTC)
    except OverflowError:
        return False
    return True


def unstorable_reason(moment: datetime) -> str | None:
    """Why a moment sent on the wire may not be stored (no timezone, out of range), or None."""
    if moment.tzinfo is None:
        return NO_TIMEZONE
    if not storable_moment(moment):
        return OUT_OF_RANGE
    return None


def _ago(count: int, unit: str) -> str:
    return f"{count} {unit}{'' if count == 1 else 's'} ago"


def relative_time(moment: datetime, now: datetime | None = None) -> str:
    """How long before now moment was, in words: "just now" under a minute, then the largest
    whole unit ("5 minutes ago", "1 hour ago", "3 days ago", "2 months ago", "1 year ago")."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    elapsed = (now or datetime.now(UTC)) - moment
    # A moment a little ahead of this clock (another machine's) is "just now" too.
    if elapsed < timedelta(minutes=1):
        return "just now"
    seconds = int(elapsed.total_seconds())
    minutes, hours, days = seconds // 60, seconds // 3600, elapsed.days
    if hours < 1:
        return _ago(minutes, "minute")
    if days < 1:
        return _ago(hours, "hour")
    if days < 30:
        return _ago(days, "day")
    if days < 365:
        return _ago(days // 30, "month")
    return _ago(days // 365, "year")
