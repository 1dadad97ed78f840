"""The thread list's judgement words (issue 28): `score:helpfulness<3`, `score:policy=pass`,
`feedback:down`, `feedback:up` and `unscored` in a search, the threads they keep, and the
"Score" column (a score's average per thread, and the list sorted by it).

A thread matches `score:x<3` when any score named x on it matches, whichever it judges (a
message on any branch, a run, the thread): the list finds threads, and the conversation shows
each message's own scores, so a judgement on one branch is never shown on its siblings.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db.models import Avg, Count, Exists, FloatField, OuterRef, Q, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce

from transcripts.errors import InvalidInput
from transcripts.ids import ulid_of
from transcripts.models import Feedback, Score, ScoreConfig, ScoreDataType, Thread
from transcripts.pagination import Keyset
from transcripts.selectors.threads import EachRow, few_ids

# score:<name><op><value>: the name has no spaces, quotes or comparison signs.
_SCORE_WORD = re.compile(r"^score:(?P<name>[^\s<>=!\"]+)(?P<op><=|>=|<|>|=)(?P<value>\S+)$")
_OPS = {"<": "lt", "<=": "lte", ">": "gt", ">=": "gte", "=": "exact"}
_FEEDBACK_WORDS = {"feedback:up": True, "feedback:down": False}
UNSCORED = "unscored"

# The list sorted by a score: the annotation it orders by, and the two sorts' names. A thread
# without that score sorts after every scored one, whichever the direction.
SCORE_SORT_KEY = "score_sort"
SCORE_SORTS = {"score": Keyset(SCORE_SORT_KEY, desc=True), "score_asc": Keyset(SCORE_SORT_KEY)}
_LAST = 1e300


@dataclass(frozen=True)
class ScoreTest:
    """One `score:` word: the scores named name whose value compares with number by op (<,
    <=, >, >=, =), or, for a word that is not a number, whose label is label (= only)."""

    name: str
    op: str
    number: float | None = None
    label: str = ""

    def matches(self) -> Q:
        """The scores this word keeps."""
        if self.number is None:
            return Q(name=self.name, label=self.label)
        return Q(name=self.name, **{f"value__{_OPS[self.op]}": self.number})


@dataclass(frozen=True)
class Judged:
    """What a search asks of judgement: score tests (all must hold), feedback (True: some 👍,
    False: some 👎, None: either) and unscored (no score and no feedback at all)."""

    scores: tuple[ScoreTest, ...] = ()
    feedback: bool | None = None
    unscored: bool = False

    def __bool__(self) -> bool:
        return bool(self.scores) or self.feedback is not None or self.unscored


def _score_test(word: str) -> ScoreTest:
    """The test a `score:` word asks for, or InvalidInput saying how to write one."""
    found = _SCORE_WORD.match(word)
    if found is None:
        raise InvalidInput(
            f"“{word}” is not a score filter: write score:name<3 (or <=, >, >=, =) or "
            "score:name=label",
            field="q",
        )
    name, op, raw = found["name"], found["op"], found["value"]
    try:
        number = float(raw)
    except ValueError:
        number = None
    if number is not None and math.isfinite(number):
        return ScoreTest(name, op, number=number)
    if op != "=":
        raise InvalidInput(f"“{word}”: only = compares a label; {op} needs a number", field="q")
    return ScoreTest(name, op, label=raw)


def split_judged(query: str) -> tuple[str, Judged]:
    """A search without its judgement words (score:…, feedback:up|down, unscored): the rest
    and what they ask. A malformed `score:` word is an InvalidInput (field q)."""
    rest: list[str] = []
    scores: list[ScoreTest] = []
    feedback: bool | None = None
    unscored = False
    for word in query.split():
        lowered = word.lower()
        if lowered.startswith("score:"):
            scores.append(_score_test(word))
        elif lowered in _FEEDBACK_WORDS:
            feedback = _FEEDBACK_WORDS[lowered]
        elif lowered == UNSCORED:
            unscored = True
        else:
            rest.append(word)
    if not (scores or feedback is not None or unscored):
        return query, Judged()
    return " ".join(rest), Judged(tuple(scores), feedback, unscored)


def _having(
    threads: QuerySet[Thread], rows: QuerySet[Any], candidates: QuerySet[Any]
) -> QuerySet[Thread]:
    """threads with at least one of rows (which have a thread_id): the matching threads read
    at once from candidates (rows in the project) when they are few, else a check per thread
    (its own rows, on the index by thread) as the list walks in order."""
    # Rows, not distinct threads: reading stops at the 501st, where a DISTINCT reads them all.
    few = few_ids(candidates.values_list("thread_id"))
    if few is not None:
        return threads.filter(pk__in=few)
    return threads.filter(EachRow(rows.filter(thread_id=OuterRef("pk"))))


def judged_threads(
    threads: QuerySet[Thread], project_id: int | None, judged: Judged
) -> QuerySet[Thread]:
    """threads (of the project, when one is given: it narrows the search for few matches)
    narrowed by what judged asks."""
    for test in judged.scores:
        scores = Score.objects.filter(test.matches())
        in_project = scores if project_id is None else scores.filter(project_id=project_id)
        threads = _having(threads, scores, in_project)
    if judged.feedback is not None:
        feedback = Feedback.objects.filter(up=judged.feedback)
        mine = feedback if project_id is None else feedback.filter(thread__project_id=project_id)
        threads = _having(threads, feedback, mine)
    if judged.unscored:
        threads = threads.exclude(Exists(Score.objects.filter(thread_id=OuterRef("pk")))).exclude(
            Exists(Feedback.objects.filter(thread_id=OuterRef("pk")))
        )
    return threads


def column_score(project_id: int, asked: str) -> str:
    """The score the list's Score column shows: the one asked for (any name), else the first
    live numeric or boolean config of the project by name, else "" (no column)."""
    if asked:
        return asked
    numeric = [ScoreDataType.NUMERIC, ScoreDataType.BOOLEAN]
    first = ScoreConfig.objects.filter(
        project_id=project_id, archived_at__isnull=True, data_type__in=numeric
    ).order_by("name")
    return first.values_list("name", flat=True).first() or ""


def _average(name: str) -> Subquery:
    """The average value of the scores named name on the outer thread."""
    scores = Score.objects.filter(thread_id=OuterRef("pk"), name=name, value__isnull=False)
    return Subquery(
        scores.values("thread_id").annotate(mean=Avg("value")).values("mean"),
        output_field=FloatField(),
    )


def score_sorted(threads: QuerySet[Thread], name: str, sort: str) -> QuerySet[Thread]:
    """threads annotated with the sort key of SCORE_SORTS[sort]: the average of their scores
    named name, those without one last."""
    last = -_LAST if SCORE_SORTS[sort].desc else _LAST
    return threads.annotate(**{SCORE_SORT_KEY: Coalesce(_average(name), Value(last))})


def score_cursor_value(value: Any) -> float | None:
    """A score sort cursor's value (a number), else None."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    return float(value) if ok and math.isfinite(value) else None


@dataclass(frozen=True)
class ScoreCell:
    """What the Score column shows of a thread: the average and how many scores it averages."""

    average: float
    count: int

    @property
    def shown(self) -> str:
        """The average to two decimals at most ("3.5", "4")."""
        return f"{round(self.average, 2):g}"


def score_cells(thread_ids: Sequence[str], name: str) -> dict[str, ScoreCell]:
    """thread id -> the average and count of its scores named name that have a value (one
    grouped query; a thread without one is absent)."""
    if not thread_ids or not name:
        return {}
    rows = (
        Score.objects.filter(thread_id__in=list(thread_ids), name=name, value__isnull=False)
        .values("thread_id")
        .annotate(mean=Avg("value"), n=Count("id"))
        .values_list("thread_id", "mean", "n")
    )
    return {ulid_of(t): ScoreCell(mean, n) for t, mean, n in rows}
