"""What an answer's score panel shows (issue 28): the project's live configs people may write,
each as a small form holding the reader's own score of it, beside the answer's score chips."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from django.urls import reverse

from transcripts.models import (
    Message,
    Score,
    ScoreConfig,
    ScoreDataType,
    ScoreSource,
    ScoreWriters,
    Thread,
)
from transcripts.permissions import Access
from transcripts.web.presenters.scores import ScoreView, score_view

BOOLEAN_CHOICES = (("yes", "Yes"), ("no", "No"))


@dataclass(frozen=True)
class PanelChoice:
    """One radio button of a categorical or boolean field."""

    value: str
    label: str
    checked: bool


@dataclass(frozen=True)
class PanelField:
    """One config's form in the panel, holding the reader's score of it (if any)."""

    config: ScoreConfig
    value: str = ""
    comment: str = ""
    mine: bool = False
    choices: tuple[PanelChoice, ...] = ()

    @property
    def kind(self) -> str:
        """numeric, categorical or boolean."""
        return str(self.config.data_type)

    @property
    def range_text(self) -> str:
        """A numeric config's range in words ("1 to 5", "at least 0"), else ""."""
        low, high = self.config.min_value, self.config.max_value
        if low is not None and high is not None:
            return f"{low:g} to {high:g}"
        if low is not None:
            return f"at least {low:g}"
        return f"at most {high:g}" if high is not None else ""


@dataclass(frozen=True)
class ScorePanel:
    """A score panel, of an answer (message_id) or of the whole thread (no message_id): where
    its forms post, its fields, and the project's slug (the configs page, linked for admins
    when there are no configs)."""

    thread_id: str
    message_id: str
    project_slug: str
    fields: list[PanelField]
    may_configure: bool = False
    done: str = ""

    @property
    def url(self) -> str:
        """Where the panel's forms post."""
        if self.message_id:
            return reverse("message_score", args=[self.thread_id, self.message_id])
        return reverse("thread_score", args=[self.thread_id])

    @property
    def key(self) -> str:
        """What the panel's element ids end with: the message's id, or thread-<its id>."""
        return self.message_id or f"thread-{self.thread_id}"


@dataclass
class ScorePart:
    """A message's scores part: its chips and, on an answer an editor reads, its panel."""

    scores: list[ScoreView] = field(default_factory=list)
    score_panel: ScorePanel | None = None


def panel_configs(configs: Sequence[ScoreConfig]) -> list[ScoreConfig]:
    """The live configs people may write, by name."""
    live = [c for c in configs if c.archived_at is None and c.writers != ScoreWriters.API]
    return sorted(live, key=lambda c: c.name)


def shown(score: Score, config: ScoreConfig) -> str:
    """A person's score of config as its form holds it: the number, the label, or yes/no."""
    if config.data_type == ScoreDataType.BOOLEAN:
        return "yes" if score.value == 1.0 else "no"
    return score.label or (f"{score.value:g}" if score.value is not None else "")


def _choices(config: ScoreConfig, value: str) -> tuple[PanelChoice, ...]:
    """The radio buttons of a categorical (its labels) or boolean (yes, no) config."""
    if config.data_type == ScoreDataType.NUMERIC:
        return ()
    pairs = (
        BOOLEAN_CHOICES
        if config.data_type == ScoreDataType.BOOLEAN
        else tuple((label, label) for label in config.label_list)
    )
    return tuple(PanelChoice(v, label, v == value) for v, label in pairs)


def mine_by_name(scores: Sequence[Score], user_id: int | None) -> dict[str, Score]:
    """The reader's own person scores among scores, by name (the newest of a name)."""
    return {
        s.name: s
        for s in scores
        if user_id is not None and s.source == ScoreSource.PERSON and s.author_id == user_id
    }


def panel_fields(configs: Sequence[ScoreConfig], mine: dict[str, Score]) -> list[PanelField]:
    """The panel's fields, one per config, holding the reader's score of each."""
    fields = []
    for config in configs:
        score = mine.get(config.name)
        value = shown(score, config) if score is not None else ""
        fields.append(
            PanelField(
                config=config,
                value=value,
                comment=score.comment if score is not None else "",
                mine=score is not None,
                choices=_choices(config, value),
            )
        )
    return fields


def score_panel(
    message: Message,
    *,
    slug: str,
    configs: Sequence[ScoreConfig],
    scores: Sequence[Score],
    user_id: int | None,
    access: Access,
    done: str = "",
) -> ScorePanel | None:
    """message's score panel for a reader with access: on answers, for editors and up (None
    otherwise). slug: the project's; configs: its panel_configs; scores: the message's."""
    if message.role != "assistant" or not access.can_edit:
        return None
    return ScorePanel(
        thread_id=message.thread_id,
        message_id=message.id,
        project_slug=slug,
        fields=panel_fields(configs, mine_by_name(scores, user_id)),
        may_configure=access.can_administer,
        done=done,
    )


def thread_part(
    thread: Thread,
    *,
    configs: Sequence[ScoreConfig],
    scores: Sequence[Score],
    user_id: int | None,
    access: Access,
    done: str = "",
) -> ScorePart:
    """The conversation header's scores part: the chips of the scores on the whole thread and,
    for editors and up, its panel. scores: thread_scores of the thread."""
    panel = None
    if access.can_edit:
        panel = ScorePanel(
            thread_id=thread.id,
            message_id="",
            project_slug=thread.project.slug,
            fields=panel_fields(configs, mine_by_name(scores, user_id)),
            may_configure=access.can_administer,
            done=done,
        )
    return ScorePart(scores=[score_view(s) for s in scores], score_panel=panel)
