"""Scores as the run page and Compare list them (issue 28): name, value, source, who wrote it,
what it judges, its comment and when."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from transcripts.models import Score

SOURCES = {"person": "person", "api": "API", "evaluator": "evaluator"}


@dataclass(frozen=True)
class ScoreLine:
    """One score, in words."""

    name: str
    value: str
    source: str
    who: str
    target: str
    comment: str
    when: datetime


def _who(score: Score) -> str:
    """Who wrote the score: the member's username, else the token's name."""
    if score.author is not None:
        return score.author.username
    if score.token is not None:
        return f"token {score.token.name}"
    return "a deleted token" if score.source != "person" else "a deleted account"


def _target(score: Score) -> str:
    """What the score judges, in words."""
    if score.message_id is None:
        return "the run" if score.run_id is not None else "the thread"
    return f"the {score.message.role} message" if score.message is not None else "a message"


def score_lines(scores: Iterable[Score]) -> list[ScoreLine]:
    """The scores as lines (their author and token loaded)."""
    return [
        ScoreLine(
            name=score.name,
            value=score.shown_value,
            source=SOURCES.get(score.source, score.source),
            who=_who(score),
            target=_target(score),
            comment=score.comment,
            when=score.created_at,
        )
        for score in scores
    ]
