"""What a dataset export asks for: its kind, format and filters, read from a query string or
the command line and checked once (bad input is an InvalidInput that names the field)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from typing import Any

from transcripts.errors import InvalidInput
from transcripts.selectors.datasets import ThreadFilters

PREFERENCES, SFT = "preferences", "sft"
# Each kind's formats, the first being the default.
FORMATS: dict[str, tuple[str, ...]] = {PREFERENCES: ("trl", "openai"), SFT: ("openai", "hf")}
KINDS = tuple(FORMATS)
DATED = ("updated", "created")
BRANCHES = ("active", "all")
# Where preference pairs come from: readers' "Prefer" marks (today's), or scores that differ.
PAIRS_FROM = ("ratings", "scores")
RATINGS, SCORES = PAIRS_FROM
# OpenAI documents only the training keys of a row; elsewhere metadata rides in every row.
METADATA_ON_REQUEST = frozenset({"openai"})
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("", "0", "false", "no", "off")
MAX_TEXT = 200
MAX_NAME = 100


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
    # sft: only paths whose last answer has scores named min_score[0] averaging at least
    # min_score[1], and (liked) more 👍 than 👎.
    min_score: tuple[str, float] | None = None
    liked: bool = False
    # preferences: pairs from "ratings" (Prefer marks) or from "scores" named score_name.
    pairs_from: str = RATINGS
    score_name: str = ""

    @property
    def judged_by(self) -> str:
        """The score name whose scores the rows read ("" for none)."""
        if self.kind == PREFERENCES:
            return self.score_name if self.pairs_from == SCORES else ""
        return self.min_score[0] if self.min_score is not None else ""

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
            rated_only=self.rated_only and self.pairs_from == RATINGS,
            scored=self.judged_by,
            liked=self.kind == SFT and self.liked,
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


def _min_score(value: str) -> tuple[str, float] | None:
    """minScore's name:number (helpfulness:4), or None when empty."""
    value = value.strip()
    if not value:
        return None
    name, _, number = value.rpartition(":")
    try:
        minimum = float(number)
    except ValueError:
        minimum = math.nan
    if not name.strip() or len(name) > MAX_NAME or not math.isfinite(minimum):
        raise InvalidInput("minScore must be name:number, as helpfulness:4", field="minScore")
    return name.strip(), minimum


def _feedback(value: str) -> bool:
    """Whether feedback=up asks for liked answers ("" for any)."""
    return _choice(value.strip().lower() or "any", ("any", "up"), "feedback") == "up"


def _pairs_from(values: Mapping[str, str]) -> tuple[str, str]:
    """(from, name): where pairs come from, and the score named when from=scores."""
    source = _choice(values.get("from") or RATINGS, PAIRS_FROM, "from")
    name = values.get("name", "").strip()
    if len(name) > MAX_NAME:
        raise InvalidInput(f"name must be at most {MAX_NAME} characters", field="name")
    if source == SCORES and not name:
        raise InvalidInput("from=scores needs the name of a score", field="name")
    return source, name if source == SCORES else ""


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
        **_judgement(kind, values),
    )


def _judgement(kind: str, values: Mapping[str, str]) -> dict[str, Any]:
    """The fields of a query that read scores and feedback (those of the other kind are
    ignored, as branches is for preferences)."""
    if kind == SFT:
        return {
            "min_score": _min_score(values.get("minScore", "")),
            "liked": _feedback(values.get("feedback", "")),
        }
    pairs_from, name = _pairs_from(values)
    return {"pairs_from": pairs_from, "score_name": name}
