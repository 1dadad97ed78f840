"""Judgement as data (issue 28): feedback on answers, a project's score configs, and scores on
a message, run or thread from people, the API and evaluators. Every write is audited.

A score is checked against the live config of its name (type, range, labels, who may write
it); a name with no config is taken as it comes unless the project requires configs. Anything
refused is an InvalidInput naming the field, and nothing is stored. A score with an externalId
already in the project updates that score instead of adding one.
"""

from __future__ import annotations

import math
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, TypedDict

from django.contrib.auth.models import AnonymousUser
from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.utils import timezone

from transcripts.errors import Conflict, InvalidInput, NotFound
from transcripts.jsonvalue import JsonObject, as_str, text_of
from transcripts.ledger.audit import record_audit
from transcripts.ledger.rights import account_of, require
from transcripts.models import (
    ApiToken,
    Feedback,
    Membership,
    Message,
    Project,
    Run,
    Score,
    ScoreConfig,
    ScoreDataType,
    ScoreSource,
    ScoreWriters,
    Thread,
)
from transcripts.permissions import User, member_access, project_access
from transcripts.selectors.scores import (
    NEEDS_CONFIG,
    live_config,
    score_by_external_id,
    scores_need_config,
)
from transcripts.times import parse_iso_utc

MAX_NAME = 100
MAX_LABEL = 100
MAX_LABELS = 50
MAX_COMMENT = 2000
MAX_DESCRIPTION = 2000
MAX_EXTERNAL_ID = 200
BOOLEAN_LABELS = {"false": 0.0, "true": 1.0}


class TokenDetails(TypedDict, total=False):
    """What the audit log records of the token that wrote."""

    via: str
    token: str
    tokenId: int | None


@dataclass(frozen=True)
class Author:
    """Who writes: a member (user), or an API token the API admitted (its id and name)."""

    user: User | None = None
    token_id: int | None = None
    token_name: str = ""

    @property
    def audited(self) -> User:
        """Who the audit log names: the member, or nobody for a token (named in details)."""
        return self.user if self.user is not None else AnonymousUser()

    def details(self) -> TokenDetails:
        """What the audit log records of a token ({} for a member)."""
        if self.user is not None:
            return {}
        return {"via": "api", "token": self.token_name, "tokenId": self.token_id}


@dataclass(frozen=True)
class Target:
    """What a score judges: a message, else a run, else the thread (always given)."""

    thread: Thread
    run: Run | None = None
    message: Message | None = None


# --- checks ----------------------------------------------------------------------------------


def clean_name(name: object, *, field: str = "name") -> str:
    """A score's or config's name: 1 to 100 characters, trimmed, no control characters."""
    text = name.strip() if isinstance(name, str) else ""
    if not text or len(text) > MAX_NAME:
        raise InvalidInput(f"{field} must be 1 to {MAX_NAME} characters", field=field)
    if any(unicodedata.category(c).startswith("C") for c in text):
        raise InvalidInput(f"{field} may not hold control characters", field=field)
    return text


def _clean_text(text: str, *, limit: int, field: str) -> str:
    """text trimmed, or InvalidInput when longer than limit or holding NUL (which PostgreSQL's
    text cannot store)."""
    text = (text or "").strip()
    if len(text) > limit:
        raise InvalidInput(f"{field} is longer than {limit} characters", field=field)
    if "\x00" in text:
        raise InvalidInput(f"{field} may not hold NUL characters", field=field)
    return text


def _clean_labels(labels: list[str]) -> list[str]:
    """A categorical config's labels: 1 to 50 distinct names."""
    cleaned = [clean_name(label, field="labels") for label in labels]
    if not cleaned or len(cleaned) > MAX_LABELS or len(set(cleaned)) != len(cleaned):
        raise InvalidInput(
            f"labels must be 1 to {MAX_LABELS} different names for a categorical score",
            field="labels",
        )
    return cleaned


def _number(value: float | None, field: str) -> float | None:
    """value, unless it is not a finite number."""
    if value is not None and not math.isfinite(value):
        raise InvalidInput(f"{field} must be a finite number", field=field)
    return value


def _checked(
    config: ScoreConfig | None, value: float | None, label: str
) -> tuple[float | None, str]:
    """(value, label) as stored for config, or InvalidInput naming the field that is wrong."""
    value = _number(value, "value")
    if config is None:
        if value is None and not label:
            raise InvalidInput("a score needs a value or a label", field="value")
        return value, label
    if config.data_type == ScoreDataType.NUMERIC:
        return _checked_number(config, value, label), ""
    if config.data_type == ScoreDataType.CATEGORICAL:
        if value is not None:
            raise InvalidInput(f"{config.name} takes a label, not a value", field="value")
        if label not in config.label_list:
            choices = ", ".join(config.label_list)
            raise InvalidInput(f"label must be one of {choices} for {config.name}", field="label")
        return None, label
    return _checked_boolean(config, value, label)


def _checked_number(config: ScoreConfig, value: float | None, label: str) -> float:
    """A numeric config's value, within its range."""
    if label:
        raise InvalidInput(f"{config.name} takes a value, not a label", field="label")
    if value is None:
        raise InvalidInput(f"{config.name} needs a numeric value", field="value")
    low, high = config.min_value, config.max_value
    if (low is not None and value < low) or (high is not None and value > high):
        span = f"{_g(low) if low is not None else '-∞'} to {_g(high) if high is not None else '∞'}"
        raise InvalidInput(f"value must be from {span} for {config.name}", field="value")
    return value


def _checked_boolean(config: ScoreConfig, value: float | None, label: str) -> tuple[float, str]:
    """A boolean config's value (1 or 0) and label ("true" or "false"), from either."""
    if label:
        if label not in BOOLEAN_LABELS or (value is not None and value != BOOLEAN_LABELS[label]):
            raise InvalidInput(f"label must be true or false for {config.name}", field="label")
        return BOOLEAN_LABELS[label], label
    if value not in (0.0, 1.0):
        raise InvalidInput(f"value must be 1 (true) or 0 (false) for {config.name}", field="value")
    assert value is not None
    return value, "true" if value == 1.0 else "false"


def _g(number: float) -> str:
    """A number without a needless .0."""
    return f"{number:g}"


def _config_for(project_id: int, name: str, source: str) -> ScoreConfig | None:
    """The live config of name, if any, once the source may write it."""
    config = live_config(project_id, name)
    if config is None:
        if scores_need_config(project_id):
            raise InvalidInput(f"{name} is not a score configured in this project", field="name")
        return None
    person = source == ScoreSource.PERSON
    allowed = config.writers == ScoreWriters.BOTH or config.writers == (
        ScoreWriters.PEOPLE if person else ScoreWriters.API
    )
    if not allowed:
        who = "people" if person else "the API"
        raise InvalidInput(f"{name} may not be written by {who}", field="source")
    return config


# --- feedback --------------------------------------------------------------------------------


def _require_reader(user: User, message: Message) -> None:
    """Refuse a user who may not read the message's thread."""
    access = member_access(user, thread_id=message.thread_id)
    require(user.is_authenticated and access.can_read, "give feedback in this project")


@transaction.atomic
def give_feedback(
    *, user: User, message: Message, up: bool, comment: str | None = None
) -> Feedback:
    """user's thumbs up (or down) on an answer, with a comment (None: keep the one given
    before): one per person and message, so giving it again changes it."""
    _require_reader(user, message)
    if message.role != "assistant":
        raise InvalidInput("feedback is given on answers only", field="message")
    changes: dict[str, Any] = {"up": up, "updated_at": timezone.now()}
    if comment is not None:
        changes["comment"] = _clean_text(comment, limit=MAX_COMMENT, field="comment")
    feedback, created = Feedback.objects.update_or_create(
        thread_id=message.thread_id, message=message, user=account_of(user), defaults=changes
    )
    record_audit(
        user,
        "give_feedback" if created else "change_feedback",
        message,
        thread_id=message.thread_id,
        up=up,
        commented=bool(feedback.comment),
    )
    return feedback


@transaction.atomic
def remove_feedback(*, user: User, message: Message) -> bool:
    """Take back user's feedback on message; whether there was one."""
    _require_reader(user, message)
    removed, _ = Feedback.objects.filter(
        thread_id=message.thread_id, message=message, user=account_of(user)
    ).delete()
    if removed:
        record_audit(user, "remove_feedback", message, thread_id=message.thread_id)
    return bool(removed)


# --- configs ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class ConfigSpec:
    """A config as asked for, before its checks."""

    name: str
    data_type: str
    min_value: float | None = None
    max_value: float | None = None
    labels: tuple[str, ...] = ()
    description: str = ""
    writers: str = ScoreWriters.BOTH


def _checked_spec(spec: ConfigSpec) -> ScoreConfig:
    """The unsaved config spec asks for, or InvalidInput naming the field that is wrong."""
    if spec.data_type not in ScoreDataType.values:
        raise InvalidInput("dataType must be numeric, categorical or boolean", field="dataType")
    if spec.writers not in ScoreWriters.values:
        raise InvalidInput("writers must be people, api or both", field="writers")
    numeric = spec.data_type == ScoreDataType.NUMERIC
    low, high = _number(spec.min_value, "min"), _number(spec.max_value, "max")
    if not numeric and (low is not None or high is not None):
        raise InvalidInput("only a numeric score has a min and a max", field="min")
    if low is not None and high is not None and low > high:
        raise InvalidInput("min must not be above max", field="min")
    categorical = spec.data_type == ScoreDataType.CATEGORICAL
    if spec.labels and not categorical:
        raise InvalidInput("only a categorical score has labels", field="labels")
    return ScoreConfig(
        name=clean_name(spec.name),
        data_type=spec.data_type,
        min_value=low,
        max_value=high,
        labels=_clean_labels(list(spec.labels)) if categorical else [],
        description=_clean_text(spec.description, limit=MAX_DESCRIPTION, field="description"),
        writers=spec.writers,
    )


def _require_admin(user: User | None, project: Project, action: str) -> None:
    """Refuse a member who is not an admin of project (None: a token the API admitted)."""
    if user is not None:
        require(project_access(user, project).can_administer, action)


def create_score_config(*, project: Project, author: Author, spec: ConfigSpec) -> ScoreConfig:
    """A new config of project (its admins'), named as no live config of the project is."""
    _require_admin(author.user, project, "configure scores")
    config = _checked_spec(spec)
    config.project = project
    try:
        with transaction.atomic():
            config.save()
            record_audit(
                author.audited, "create_score_config", config, project=project,
                name=config.name, dataType=config.data_type, **author.details(),
            )  # fmt: skip
    except IntegrityError:
        raise Conflict(
            f"a score called {config.name} is configured already", field="name"
        ) from None
    return config


@transaction.atomic
def archive_score_config(*, config: ScoreConfig, author: Author) -> ScoreConfig:
    """Archive config: its scores stay, and its name is free again. Twice changes nothing."""
    project = config.project
    _require_admin(author.user, project, "configure scores")
    if config.archived_at is None:
        config.archived_at = timezone.now()
        config.save(update_fields=["archived_at"])
        record_audit(
            author.audited, "archive_score_config", config, project=project,
            name=config.name, **author.details(),
        )  # fmt: skip
    return config


@transaction.atomic
def set_scores_need_config(*, project: Project, user: User, required: bool) -> Project:
    """Whether project refuses a score whose name has no config (its admins decide)."""
    _require_admin(user, project, "configure scores")
    locked = Project.objects.select_for_update().get(pk=project.pk)
    settings = locked.settings if isinstance(locked.settings, dict) else {}
    locked.settings = {**settings, NEEDS_CONFIG: required}
    locked.save(update_fields=["settings"])
    project.settings = locked.settings
    record_audit(user, "set_scores_need_config", project, project=project, required=required)
    return project


# --- scores ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScoreSpec:
    """A score as asked for, before its checks."""

    name: str
    value: float | None = None
    label: str = ""
    comment: str = ""
    source: str = ScoreSource.API
    external_id: str = ""


def _source_of(author: Author, source: str) -> str:
    """The source a score is stored with: a member's is a person's; a token says api or
    evaluator."""
    if author.user is not None:
        require(source == ScoreSource.PERSON, "score as anything but a person")
        return source
    if source not in (ScoreSource.API, ScoreSource.EVALUATOR):
        raise InvalidInput("source must be api or evaluator", field="source")
    return source


def _require_scorer(author: Author, target: Target) -> None:
    """Refuse a member who may not read the target's thread (a token: the API decided)."""
    if author.user is not None:
        access = member_access(author.user, thread_id=target.thread.id)
        require(author.user.is_authenticated and access.can_read, "score in this project")


def _target_fields(target: Target) -> dict[str, Any]:
    """The score's columns naming its target (at most one of message and run)."""
    return {
        "project_id": target.thread.project_id,
        "thread_id": target.thread.id,
        "message": target.message,
        "run": target.run if target.message is None else None,
    }


def _stored(project_id: int, external_id: str, fields: dict[str, Any]) -> tuple[Score, bool]:
    """The score with fields, added, or updated when external_id names one of the project's
    (also one a concurrent call added first: its insert's conflict turns into the update)."""
    if external_id:
        existing = score_by_external_id(project_id, external_id)
        if existing is None:
            try:
                with transaction.atomic():
                    new = Score.objects.create(
                        external_id=external_id, created_at=fields["updated_at"], **fields
                    )
                return new, True
            except IntegrityError:
                existing = score_by_external_id(project_id, external_id)
                if existing is None:
                    raise
        Score.objects.filter(pk=existing.pk).update(**fields)
        existing.refresh_from_db()
        return existing, False
    return Score.objects.create(created_at=fields["updated_at"], **fields), True


@transaction.atomic
def add_score(*, target: Target, author: Author, spec: ScoreSpec) -> tuple[Score, bool]:
    """The score spec asks for on target, checked against its config, and whether it is new
    (False: spec's externalId named a score of the project, which it updated)."""
    _require_scorer(author, target)
    project_id = target.thread.project_id
    source = _source_of(author, spec.source)
    name = clean_name(spec.name)
    config = _config_for(project_id, name, source)
    value, label = _checked(
        config, spec.value, _clean_text(spec.label, limit=MAX_LABEL, field="label")
    )
    external_id = _clean_text(spec.external_id, limit=MAX_EXTERNAL_ID, field="externalId")
    fields = {
        **_target_fields(target),
        "name": name, "config": config, "value": value, "label": label,
        "comment": _clean_text(spec.comment, limit=MAX_COMMENT, field="comment"),
        "source": source, "author": account_of(author.user), "token_id": author.token_id,
        "updated_at": timezone.now(),
    }  # fmt: skip
    score, created = _stored(project_id, external_id, fields)
    record_audit(
        author.audited, "add_score" if created else "update_score", score,
        thread_id=target.thread.id, name=name, kind=score.target_type, **author.details(),
    )  # fmt: skip
    return score, created


@transaction.atomic
def delete_score(*, score: Score, author: Author) -> None:
    """Delete score: a project admin's (or a token the API admitted), or its own author's."""
    if author.user is not None:
        own = score.author_id is not None and score.author_id == author.user.pk
        admin = member_access(author.user, thread_id=score.thread_id).can_administer
        require(own or admin, "delete this score")
    deleted, _ = Score.objects.filter(pk=score.pk).delete()
    if not deleted:
        raise NotFound(f"score {score.pk} does not exist", scoreId=str(score.pk))
    record_audit(
        author.audited, "delete_score", score, thread_id=score.thread_id, name=score.name,
        **author.details(),
    )  # fmt: skip


# --- imports (canonical documents carry scores and feedback) ---------------------------------


@dataclass(frozen=True)
class ImportedJudgement:
    """One imported thread's scores and feedback as the document holds them, with the ids
    its messages and runs were stored under (document id -> stored id)."""

    thread_id: str
    scores: list[JsonObject]
    feedback: list[JsonObject]
    message_ids: dict[str, str]
    run_ids: dict[str, str]


@dataclass
class JudgementImported:
    """What an import wrote of judgement, and the feedback it left out (why, per item)."""

    scores: int = 0
    feedback: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (where, why)


def import_judgement(project: Project, judged: list[ImportedJudgement]) -> JudgementImported:
    """Store imported scores and feedback on their threads' new ids (canonical documents were
    checked already). A score links to the live config of its name if the project has one,
    to its author if that username is a member (else to the project's one token of its token's
    name, if any), and keeps its externalId when the project has not used it; feedback is kept
    only when its username is a member (else skipped)."""
    done = JudgementImported()
    if not any(j.scores or j.feedback for j in judged):
        return done
    members, configs, tokens, taken = _import_lookups(project, judged)
    scores: list[Score] = []
    feedback: list[Feedback] = []
    for item in judged:
        for entry in item.scores:
            score = _imported_score(project, item, entry, members, configs)
            score.token_id = (
                tokens.get(text_of(entry.get("token"))) if score.author_id is None else None
            )
            if score.external_id in taken:
                score.external_id = ""
            taken.add(score.external_id)
            scores.append(score)
        for index, entry in enumerate(item.feedback):
            user_id = members.get(text_of(entry.get("user")))
            if user_id is None:
                where = f"thread {item.thread_id} feedback[{index}]"
                done.skipped.append((where, f"{entry.get('user')} is not a member here"))
                continue
            feedback.append(_imported_feedback(item, entry, user_id))
    Score.objects.bulk_create(scores, batch_size=1000)
    Feedback.objects.bulk_create(feedback, batch_size=1000, ignore_conflicts=True)
    done.scores, done.feedback = len(scores), len(feedback)
    record_audit(
        AnonymousUser(), "import_scores", project, project=project,
        scores=done.scores, feedback=done.feedback, skipped=len(done.skipped),
    )  # fmt: skip
    return done


def _import_lookups(
    project: Project, judged: list[ImportedJudgement]
) -> tuple[dict[str, int], dict[str, ScoreConfig], dict[str, int], set[str]]:
    """What an import links its scores to in project: member ids by username, live configs by
    name, token ids by name (names only one token has), and the externalIds already used."""
    members = dict(
        Membership.objects.filter(project=project).values_list("user__username", "user_id")
    )
    configs = {
        c.name: c for c in ScoreConfig.objects.filter(project=project, archived_at__isnull=True)
    }
    named = Counter(ApiToken.objects.filter(project=project).values_list("name", flat=True))
    tokens = {
        name: pk
        for name, pk in ApiToken.objects.filter(project=project).values_list("name", "pk")
        if named[name] == 1
    }
    wanted = {text_of(s.get("externalId")) for j in judged for s in j.scores} - {""}
    taken = set(
        Score.objects.filter(project=project, external_id__in=wanted).values_list(
            "external_id", flat=True
        )
    )
    return members, configs, tokens, taken


def _imported_score(
    project: Project,
    item: ImportedJudgement,
    entry: JsonObject,
    members: dict[str, int],
    configs: dict[str, ScoreConfig],
) -> Score:
    """The unsaved Score an imported entry stands for, on the stored ids."""
    message = as_str(entry.get("messageId"))
    run = as_str(entry.get("runId"))
    value = entry.get("value")
    name = text_of(entry.get("name")).strip()[:MAX_NAME]
    created = parse_iso_utc(entry.get("createdAt")) or timezone.now()
    return Score(
        project=project,
        thread_id=item.thread_id,
        message_id=item.message_ids.get(message) if message else None,
        run_id=item.run_ids.get(run) if run and not message else None,
        name=name,
        config=configs.get(name),
        value=float(value) if isinstance(value, (int, float)) else None,
        label=text_of(entry.get("label"))[:MAX_LABEL],
        comment=text_of(entry.get("comment")),
        source=text_of(entry.get("source")),
        author_id=members.get(text_of(entry.get("author"))),
        external_id=text_of(entry.get("externalId"))[:MAX_EXTERNAL_ID],
        created_at=created,
        updated_at=parse_iso_utc(entry.get("updatedAt")) or created,
    )


def _imported_feedback(item: ImportedJudgement, entry: JsonObject, user_id: int) -> Feedback:
    """The unsaved Feedback an imported entry stands for, on the stored message id."""
    created = parse_iso_utc(entry.get("createdAt")) or timezone.now()
    return Feedback(
        thread_id=item.thread_id,
        message_id=item.message_ids[text_of(entry.get("messageId"))],
        user_id=user_id,
        up=entry.get("up") is True,
        comment=text_of(entry.get("comment")),
        created_at=created,
        updated_at=parse_iso_utc(entry.get("updatedAt")) or created,
    )


# --- a person's own score (the conversation's score panel) -----------------------------------


def _require_person_scorer(user: User, thread: Thread) -> None:
    """Refuse a member who may not score in the thread (editors and up)."""
    access = member_access(user, thread_id=thread.id)
    require(user.is_authenticated and access.can_edit, "score in this project")


def _own_scores(user: User, target: Target, name: str) -> QuerySet[Score]:
    """user's person scores called name on target (a message, or the thread itself)."""
    return Score.objects.filter(
        thread_id=target.thread.id, message=target.message, run=None, name=name,
        source=ScoreSource.PERSON, author=account_of(user),
    )  # fmt: skip


@transaction.atomic
def _set_own(user: User, target: Target, spec: ScoreSpec) -> Score:
    """user's score on target, replacing theirs of that name (see set_person_score)."""
    _require_person_scorer(user, target.thread)
    # The thread's row, held to the end: one person's two saves run one after the other.
    Thread.objects.select_for_update().filter(pk=target.thread.id).values_list("pk").first()
    name = clean_name(spec.name)
    replaced = list(_own_scores(user, target, name).values_list("pk", flat=True))
    person = ScoreSpec(name=name, value=spec.value, label=spec.label, comment=spec.comment,
                       source=ScoreSource.PERSON)  # fmt: skip
    score, _ = add_score(target=target, author=Author(user=user), spec=person)
    if replaced:
        Score.objects.filter(pk__in=replaced).delete()
        record_audit(user, "replace_score", score, thread_id=target.thread.id, name=name,
                     replaced=[str(pk) for pk in replaced])  # fmt: skip
    return score


@transaction.atomic
def _remove_own(user: User, target: Target, name: str) -> bool:
    """Take back user's score called name on target; whether there was one."""
    _require_person_scorer(user, target.thread)
    scores = list(_own_scores(user, target, clean_name(name)))
    for score in scores:
        delete_score(score=score, author=Author(user=user))
    return bool(scores)


def set_person_score(*, user: User, message: Message, spec: ScoreSpec) -> Score:
    """user's score on message (editors and up), replacing the one of that name they gave it
    before: one per person, name and message. Checked like add_score; refused: nothing changes."""
    return _set_own(user, Target(thread=message.thread, message=message), spec)


def remove_person_score(*, user: User, message: Message, name: str) -> bool:
    """Take back user's score called name on message; whether there was one."""
    return _remove_own(user, Target(thread=message.thread, message=message), name)


def set_person_thread_score(*, user: User, thread: Thread, spec: ScoreSpec) -> Score:
    """user's score on the whole thread, as set_person_score on a message."""
    return _set_own(user, Target(thread=thread), spec)


def remove_person_thread_score(*, user: User, thread: Thread, name: str) -> bool:
    """Take back user's score called name on the whole thread; whether there was one."""
    return _remove_own(user, Target(thread=thread), name)
