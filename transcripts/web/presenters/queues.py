"""What the queue pages show (issue 28): a queue's progress as a bar and in words, and the
review form's fields, one per score config (a number within its range, a label, yes or no)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from transcripts.models import AnnotationQueue, ScoreConfig, ScoreDataType
from transcripts.selectors.queues import Progress


@dataclass(frozen=True)
class QueueRow:
    """One queue in the project's list."""

    queue: AnnotationQueue
    progress: Progress


@dataclass(frozen=True)
class Choice:
    """One radio button of a field: its value, its label, whether it is picked, its key."""

    value: str
    label: str
    checked: bool
    key: str


@dataclass(frozen=True)
class ScoreField:
    """The review form's field for one config."""

    config: ScoreConfig
    name: str
    kind: str
    value: str
    choices: tuple[Choice, ...] = ()
    error: str = ""

    @property
    def range_text(self) -> str:
        """ "1 to 5" for a numeric config with both ends, "" otherwise."""
        low, high = self.config.min_value, self.config.max_value
        if low is None or high is None:
            return ""
        return f"{low:g} to {high:g}"


def queue_rows(queues: Sequence[AnnotationQueue]) -> list[QueueRow]:
    """The list's rows (queues from selectors.queues_of, which counts their items)."""
    return [
        QueueRow(q, Progress(total=getattr(q, "total", 0), done=getattr(q, "done", 0)))
        for q in queues
    ]


def field_name(config: ScoreConfig) -> str:
    """The form field of config's answer."""
    return f"score-{config.pk}"


def _choices(config: ScoreConfig, value: str) -> tuple[Choice, ...]:
    """The radio buttons of a categorical (its labels, keys 1-9) or boolean config (y/n)."""
    if config.data_type == ScoreDataType.BOOLEAN:
        return (
            Choice("yes", "Yes", value == "yes", "y"),
            Choice("no", "No", value == "no", "n"),
        )
    return tuple(
        Choice(label, label, value == label, str(n) if n <= 9 else "")
        for n, label in enumerate(config.label_list, start=1)
    )


def score_fields(
    configs: Sequence[ScoreConfig], answers: Mapping[str, str], error: tuple[str, str] = ("", "")
) -> list[ScoreField]:
    """The form's fields, holding the answers given (field name -> text); error: (the config
    name the refusal named, its message), shown on that field."""
    fields = []
    for config in configs:
        name = field_name(config)
        value = answers.get(name, "")
        fields.append(
            ScoreField(
                config=config,
                name=name,
                kind=config.data_type,
                value=value,
                choices=()
                if config.data_type == ScoreDataType.NUMERIC
                else _choices(config, value),
                error=error[1] if error[0] == config.name else "",
            )
        )
    return fields
