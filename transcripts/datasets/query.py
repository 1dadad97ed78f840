"""What a dataset export asks for: its kind, format and filters, read from a query string or
the command line and checked once (bad input is an InvalidInput that names the field)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date

from transcripts.errors import InvalidInput
from transcripts.selectors.datasets import ThreadFilters

PREFERENCES, SFT = "preferences", "sft"
# Each kind's formats, the first being the default.
FORMATS: dict[str, tuple[str, ...]] = {PREFERENCES: ("trl", "openai"), SFT: ("openai", "hf")}
KINDS = tuple(FORMATS)
DATED = ("updated", "created")
BRANCHES = ("active", "all")
# OpenAI documents only the training keys of a row; elsewhere metadata rides in every row.
METADATA_ON_REQUEST = frozenset({"openai"})
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("", "0", "false", "no", "off")
MAX_TEXT = 200


@dataclass(frozen=True)
class DatasetQuery:
    """One export: the rows of kind in format, from the threads the filters keep."""

    kind: str
    format: str
    since: date | None = None
    until: date | None = None
    dated: str = "updated"
    model: str = ""
    agent: str = ""
    rated_only: bool = False
    search: str = ""
    branches: str = "active"
    metadata: bool = True

    @property
    def thread_filters(self) -> ThreadFilters:
        """Which threads this export reads."""
        return ThreadFilters(
            search=self.search,
            by_update=self.dated == "updated",
            since=self.since,
            until=self.until,
            model=self.model,
            agent=self.agent,
            branched=self.kind == PREFERENCES,
            rated_only=self.rated_only,
        )

    @property
    def filename(self) -> str:
        """The download's file name (without the project)."""
        return f"{self.kind}-{self.format}.jsonl"


def _choice(value: str, allowed: tuple[str, ...], field: str) -> str:
    if value not in allowed:
        raise InvalidInput(f"{field} must be one of {', '.join(allowed)}", field=field)
    return value


def _date(value: str, field: str) -> date | None:
    if not value:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise InvalidInput(f"{field} must be a date (YYYY-MM-DD)", field=field) from None


def _flag(value: str, field: str) -> bool:
    lowered = value.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise InvalidInput(f"{field} must be true or false", field=field)


def _text(value: str, field: str) -> str:
    value = value.strip()
    if len(value) > MAX_TEXT or "\x00" in value:
        raise InvalidInput(f"{field} must be text of at most {MAX_TEXT} characters", field=field)
    return value


def parse_query(kind: str, values: Mapping[str, str]) -> DatasetQuery:
    """The export asked for by values (query string names), or InvalidInput naming the field.

    `metadata` defaults to on, except for the OpenAI formats, whose rows then hold exactly the
    keys OpenAI documents (`metadata=true` adds it).
    """
    kind = _choice(kind, KINDS, "kind")
    fmt = _choice(values.get("format") or FORMATS[kind][0], FORMATS[kind], "format")
    since = _date(values.get("since", ""), "since")
    until = _date(values.get("until", ""), "until")
    if since is not None and until is not None and since > until:
        raise InvalidInput("since must not be after until", field="since")
    metadata_default = "false" if fmt in METADATA_ON_REQUEST else "true"
    return DatasetQuery(
        kind=kind,
        format=fmt,
        since=since,
        until=until,
        dated=_choice(values.get("dated") or "updated", DATED, "dated"),
        model=_text(values.get("model", ""), "model"),
        agent=_text(values.get("agent", ""), "agent"),
        rated_only=_flag(values.get("rated", ""), "rated"),
        search=_text(values.get("q", ""), "q"),
        branches=_choice(values.get("branches") or "active", BRANCHES, "branches"),
        metadata=_flag(values.get("metadata") or metadata_default, "metadata"),
    )
