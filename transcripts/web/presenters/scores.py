"""What the pages show of judgement (issue 28): an answer's feedback part (the reader's
thumbs, the counts, the comment form) and its scores, and a project's score configs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.urls import reverse

from transcripts.models import Score, ScoreConfig, ScoreDataType, ScoreWriters
from transcripts.selectors.scores import FeedbackSummary

if TYPE_CHECKING:
    pass


@dataclass(frozen=True)
class ScoreView:
    """One score as a message shows it: its name, its value in words, where it came from."""

    name: str
    value: str
    source: str
    comment: str


@dataclass(frozen=True)
class FeedbackView:
    """An answer's feedback part: the counts, the reader's own thumb ("up", "down" or "") and
    comment, where the forms post, and what was just done (for the status line)."""

    thread_id: str
    message_id: str
    up: int = 0
    down: int = 0
    mine: str = ""
    comment: str = ""
    done: str = ""

    @property
    def url(self) -> str:
        """Where the feedback forms post."""
        return reverse("message_feedback", args=[self.thread_id, self.message_id])

    @property
    def summary(self) -> str:
        """The counts in words."""
        return f"{self.up} helpful, {self.down} not helpful"


def score_view(score: Score) -> ScoreView:
    """A score in words."""
    return ScoreView(score.name, score.shown_value, score.source, score.comment)


def feedback_view(
    thread_id: str, message_id: str, summary: FeedbackSummary | None, done: str = ""
) -> FeedbackView:
    """The feedback part of one answer."""
    summary = summary or FeedbackSummary()
    mine = summary.mine
    return FeedbackView(
        thread_id=thread_id,
        message_id=message_id,
        up=summary.up,
        down=summary.down,
        mine="" if mine is None else ("up" if mine.up else "down"),
        comment=mine.comment if mine is not None else "",
        done=done,
    )


@dataclass(frozen=True)
class ConfigRow:
    """A score config as the scores page lists it."""

    config: ScoreConfig
    kind: str  # the type and its range or labels, in words
    writers: str  # who writes its scores, as "Written by …" goes on

    @property
    def archived(self) -> bool:
        """Whether the config is archived (its scores stay)."""
        return self.config.archived_at is not None


def _kind(config: ScoreConfig) -> str:
    """A config's type in words: "numeric, 1 to 5", "categorical: pass, fail", "boolean"."""
    if config.data_type == ScoreDataType.CATEGORICAL:
        return "categorical: " + ", ".join(config.label_list)
    if config.data_type == ScoreDataType.NUMERIC:
        return "numeric" + _range(config.min_value, config.max_value)
    return "boolean (true or false)"


def _range(low: float | None, high: float | None) -> str:
    """A numeric config's range in words ("" when it has none)."""
    if low is not None and high is not None:
        return f", {low:g} to {high:g}"
    if low is not None:
        return f", at least {low:g}"
    return f", at most {high:g}" if high is not None else ""


# Who writes a config's scores, in a sentence ("Written by …").
WRITTEN_BY: dict[str, str] = {
    ScoreWriters.PEOPLE: "people",
    ScoreWriters.API: "the API",
    ScoreWriters.BOTH: "people and the API",
}


def config_rows(configs: Sequence[ScoreConfig]) -> list[ConfigRow]:
    """The scores page's rows."""
    return [ConfigRow(c, _kind(c), WRITTEN_BY.get(c.writers, c.writers)) for c in configs]
