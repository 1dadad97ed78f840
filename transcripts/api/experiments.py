"""Experiments over the API (issue 29): make one (a token with ingest and read, or admin; or
an editor's browser session), read it with its progress and summary, export its results
(JSON pages, or CSV and JSON Lines streamed), and pause, resume, cancel, adopt, discard and
judge it.

Reads need the read scope, writes the ingest scope (admin holds both); a browser session
reads where its user is a member and writes where they are an editor (with the session's
CSRF token). A verdict is a person's: only a session judges. An experiment of another project
does not exist for the caller (404, as an unknown id).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from typing import Any

from django.http import HttpRequest, StreamingHttpResponse
from ninja import Router, Status
from ninja.params.functions import Query

from transcripts import permissions
from transcripts.api.access import caller, get_project_for_caller, row_id
from transcripts.api.auth import member_write_auth, read_auth
from transcripts.api.errors import ERRORS
from transcripts.api.schemas.experiments import (
    AdoptIn,
    AdoptOut,
    DiscardIn,
    DiscardOut,
    ExperimentIn,
    ExperimentList,
    ExperimentOut,
    JudgeIn,
    JudgeOut,
    ResultPageOut,
    ResultRowOut,
)
from transcripts.errors import InvalidInput, NotFound, PermissionDenied
from transcripts.generation import experiments as service
from transcripts.generation.experiments import ExperimentRequest
from transcripts.ledger import experiments as ledger
from transcripts.ledger.scores import Author
from transcripts.models import Experiment, Project, Thread
from transcripts.permissions import ADMIN, INGEST, READ, Principal, TokenAccess
from transcripts.selectors.experiment_results import (
    METRICS,
    PAGE_SIZE,
    Rate,
    ResultRow,
    Summary,
    all_rows,
    item_by_id,
    parse_result_filter,
    result_page,
    summary,
)
from transcripts.selectors.experiments import (
    answer_text,
    experiment_by_id,
    experiments_of,
    progress,
)

router = Router(auth=read_auth)  # mounted at /experiments
FORMATS = ("json", "csv", "jsonl")

# --- who the caller is, and what it reaches ------------------------------------------------------


def _author(principal: Principal) -> Author:
    """The caller as the ledger names it: the member, or the token."""
    if principal.is_session:
        return Author(user=principal.user)
    return Author(token_id=principal.token_id, token_name=principal.name)


def _require(principal: Principal, project: Project, scopes: Iterable[str]) -> None:
    """403 unless a token holds every scope of scopes (admin holds them all), or a session's
    user may edit the project (scopes beyond read)."""
    needs = list(scopes)
    if principal.is_session:
        access = permissions.project_access(principal.user, project)
        if needs != [READ] and not access.can_edit:
            raise PermissionDenied("you may not run experiments: that needs an editor")
        return
    access_of_token = TokenAccess(in_project=True, scopes=principal.scopes)
    able = {READ: access_of_token.can_read, INGEST: access_of_token.can_ingest}
    for scope in needs:
        if not able[scope]:
            raise PermissionDenied(f"this token lacks the {scope!r} scope", scope=scope)


def _project(request: HttpRequest, slug: str | None, scopes: Iterable[str]) -> Project:
    """The project the caller names (a token: its own), NotFound outside it, 403 without
    scopes."""
    project = get_project_for_caller(request, slug, needs=[])
    _require(caller(request), project, scopes)
    return project


def _experiment(request: HttpRequest, experiment_id: str, scopes: Iterable[str]) -> Experiment:
    """The experiment, when the caller reaches its project (else NotFound, as an unknown id),
    then 403 without scopes."""
    principal = caller(request)
    experiment = experiment_by_id(experiment_id)
    if experiment is not None and principal.is_session:
        reached = permissions.project_access(principal.user, experiment.project).can_read
    else:
        reached = experiment is not None and experiment.project_id == principal.project_id
    if experiment is None or not reached:
        raise NotFound(f"experiment {experiment_id} does not exist", experimentId=experiment_id)
    _require(principal, experiment.project, scopes)
    return experiment


def _sees_thread(request: HttpRequest, project: Project) -> Callable[[Thread], bool]:
    """Whether the caller may read a thread's content (a hidden one: moderators and admin
    tokens)."""
    principal = caller(request)
    if principal.is_session:
        sees_hidden = permissions.project_access(principal.user, project).sees_hidden
    else:
        sees_hidden = ADMIN in principal.scopes
    return lambda thread: sees_hidden or not thread.hidden


# --- what the API shows --------------------------------------------------------------------------


def _rate(rate: Rate) -> dict[str, Any]:
    interval = rate.interval
    return {
        "hits": rate.hits,
        "total": rate.total,
        "value": rate.value,
        "low": interval[0] if interval else None,
        "high": interval[1] if interval else None,
    }


def summary_out(found: Summary) -> dict[str, Any]:
    """The summary as the API shows it."""
    return {
        "wins": found.wins,
        "losses": found.losses,
        "ties": found.ties,
        "unjudged": found.unjudged,
        "winRate": _rate(found.win_rate),
        "metrics": {
            side: {
                name: {"count": m.count, "mean": m.mean, "p50": m.p50, "p95": m.p95}
                for name, m in metrics.items()
            }
            for side, metrics in found.metrics.items()
        },
        "costDelta": found.cost_delta,
        "evaluators": [
            {"name": e.name, "candidate": _rate(e.candidate), "baseline": _rate(e.baseline)}
            for e in found.evaluators
        ],
    }


def experiment_out(experiment: Experiment) -> dict[str, Any]:
    """An experiment with its progress and summary."""
    return {
        "id": experiment.id,
        "name": experiment.name,
        "description": experiment.description,
        "status": experiment.status,
        "generator": experiment.generator,
        "model": experiment.model,
        "parameters": experiment.parameters,
        "systemPrompt": experiment.system_prompt,
        "systemPromptMode": experiment.system_prompt_mode,
        "forkRule": experiment.fork_rule,
        "source": experiment.source,
        "evaluators": experiment.evaluators,
        "concurrency": experiment.concurrency,
        "threadCount": experiment.thread_count,
        "itemCount": experiment.item_count,
        "createdAt": experiment.created_at,
        "finishedAt": experiment.finished_at,
        "progress": progress(experiment).as_json(),
        "summary": summary_out(summary(experiment)),
    }


def _capital(name: str) -> str:
    return name[0].upper() + name[1:]


def row_out(row: ResultRow, *, readable: bool) -> dict[str, Any]:
    """One result row, flat (the answers' text null when the caller may not read it)."""
    item = row.item
    out: dict[str, Any] = {
        "position": item.position,
        "itemId": item.pk,
        "threadId": str(item.thread_id),
        "threadTitle": row.thread.title if readable else "",
        "forkFromMessageId": str(item.fork_from_id) if item.fork_from_id else None,
        "status": item.status,
        "error": item.error if isinstance(item.error, dict) else None,
        "baselineRunId": str(item.baseline_run_id) if item.baseline_run_id else None,
        "candidateRunId": str(item.run_id) if item.run_id else None,
        "baselineText": answer_text(row.baseline) if readable else None,
        "candidateText": answer_text(row.candidate) if readable else None,
    }
    for side in ("baseline", "candidate"):
        for metric in METRICS:
            out[side + _capital(metric)] = row.metric(side, metric)
    out.update(
        {
            "outcome": item.outcome,
            "judgeOutcome": item.judge_outcome,
            "personOutcome": item.person_outcome,
            "disagreement": item.disagreement,
            "evaluations": item.evaluations if isinstance(item.evaluations, list) else [],
            "adoptedAt": item.adopted_at,
        }
    )
    return out


def _jsonable(value: object) -> object:
    return value.isoformat() if isinstance(value, datetime) else value


def evaluator_names(experiment: Experiment) -> list[str]:
    """The names of the experiment's evaluators, in order, each once."""
    names = [
        str(e.get("name") or e.get("type"))
        for e in experiment.evaluators
        if isinstance(e, dict) and (e.get("name") or e.get("type"))
    ]
    return list(dict.fromkeys(names))


def _csv_lines(rows: Iterator[dict[str, Any]], evaluators: list[str]) -> Iterator[str]:
    """The rows as CSV, a line at a time (the header first, also for no rows): the row's
    columns, then "<name>.passed" per evaluator (true, false or empty)."""
    columns = [name for name in ResultRowOut.model_fields if name != "evaluations"]
    buffer = io.StringIO()
    writer = csv.writer(buffer)

    def line(cells: list[str]) -> str:
        writer.writerow(cells)
        text = buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
        return text

    yield line([*columns, *(f"{name}.passed" for name in evaluators)])
    for row in rows:
        evaluations = row["evaluations"]
        passed = {str(e.get("name")): e.get("passed") for e in evaluations if isinstance(e, dict)}
        yield line(
            [_cell(_jsonable(row[name])) for name in columns]
            + [_cell(passed.get(name)) for name in evaluators]
        )


# A text cell a spreadsheet would run as a formula begins with one of these: it gets a leading
# apostrophe in the CSV (JSON Lines keeps every text as it is).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _cell(value: object) -> str:
    """A CSV cell: booleans as true/false, an object (an error) as JSON, nothing as ""; a
    text a spreadsheet would take for a formula begins with an apostrophe."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return "" if value is None else str(value)


# --- the endpoints -------------------------------------------------------------------------------


def _request_of(payload: ExperimentIn, key: str) -> ExperimentRequest:
    return ExperimentRequest(
        name=payload.name,
        description=payload.description,
        generator=payload.generator,
        model=payload.model,
        parameters=payload.parameters,
        system_prompt=payload.systemPrompt,
        system_prompt_mode=payload.systemPromptMode,
        fork_rule=payload.forkRule,
        filter=payload.filter,
        tag=payload.tag,
        queue_id=payload.queueId,
        thread_ids=tuple(payload.threadIds),
        forks=payload.forks,
        evaluators=payload.evaluators,
        concurrency=payload.concurrency,
        idempotency_key=key,
    )


@router.post(
    "", response={200: ExperimentOut, 201: ExperimentOut, **ERRORS}, auth=member_write_auth
)
def create_experiment(request: HttpRequest, payload: ExperimentIn) -> Status[dict[str, Any]]:
    """Make an experiment of the caller's project and start it (201); the same
    Idempotency-Key header again returns that experiment (200). Bad input: 422, nothing
    queued."""
    project = _project(request, payload.project, [INGEST, READ])
    experiment, created = service.create(
        project=project,
        author=_author(caller(request)),
        request=_request_of(payload, request.headers.get("Idempotency-Key", "")),
    )
    return Status(201 if created else 200, experiment_out(experiment))


@router.get("", response={200: ExperimentList, **ERRORS})
def list_experiments(
    request: HttpRequest,
    project: str | None = Query(None, description="The project's slug (a token: its own)"),
) -> dict[str, Any]:
    """The project's experiments, newest first."""
    found = _project(request, project, [READ])
    return {"experiments": [experiment_out(e) for e in experiments_of(found)]}


@router.get("/{experimentId}", response={200: ExperimentOut, **ERRORS})
def get_experiment(request: HttpRequest, experimentId: str) -> dict[str, Any]:
    """The experiment, its counts per status and its summary."""
    return experiment_out(_experiment(request, experimentId, [READ]))


# The exports' media types, beside the JSON page's.
_EXPORTS = {
    "text/csv": {"schema": {"type": "string"}},
    "application/x-ndjson": {"schema": {"type": "string"}},
}


@router.get(
    "/{experimentId}/results",
    response={200: ResultPageOut, **ERRORS},
    openapi_extra={"responses": {200: {"content": _EXPORTS}}},
)
def results(
    request: HttpRequest,
    experimentId: str,
    format: str = Query("json", description="json (paged), csv or jsonl (streamed, every row)"),
    disagreements: bool = Query(False, description="Only pairs whose verdicts disagree"),
    status: str = Query("", description="Only items of this status"),
    outcome: str = Query("", description="win, loss, tie or unjudged"),
    tag: str = Query("", description="Only threads with this tag"),
    failing: str = Query("", description="Only candidates this evaluator failed"),
    sort: str = Query("position", description="A column, e.g. -candidate-latencyMs"),
    page: int = Query(1, ge=1, le=1_000_000),
    pageSize: int = Query(PAGE_SIZE, ge=1, le=500),
) -> dict[str, Any] | StreamingHttpResponse:
    """One row per item: the two answers, their metrics, evaluations and verdicts."""
    experiment = _experiment(request, experimentId, [READ])
    if format not in FORMATS:
        raise InvalidInput(f"format must be one of {', '.join(FORMATS)}", field="format")
    spec = parse_result_filter(
        {
            "disagreements": "1" if disagreements else "",
            "status": status,
            "outcome": outcome,
            "tag": tag,
            "failing": failing,
            "sort": sort,
        }
    )
    sees = _sees_thread(request, experiment.project)
    if format == "json":
        found = result_page(experiment, spec, page=page, size=pageSize)
        return {
            "rows": [row_out(r, readable=sees(r.thread)) for r in found.rows],
            "total": found.total,
            "page": found.page,
            "pageSize": found.size,
            "pages": found.pages,
        }
    rows = (row_out(r, readable=sees(r.thread)) for r in all_rows(experiment, spec))
    if format == "csv":
        lines = _csv_lines(rows, evaluator_names(experiment))
        content_type = "text/csv; charset=utf-8"
    else:
        lines = (json.dumps(r, default=_jsonable, ensure_ascii=False) + "\n" for r in rows)
        content_type = "application/x-ndjson; charset=utf-8"
    response = StreamingHttpResponse((line.encode() for line in lines), content_type=content_type)
    filename = f"experiment-{experiment.id}.{format}"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def _act(
    request: HttpRequest, experimentId: str, action: Callable[..., Experiment]
) -> dict[str, Any]:
    """Pause, resume or cancel the experiment (ingest scope, or an editor's session)."""
    experiment = _experiment(request, experimentId, [INGEST])
    done = action(experiment=experiment, author=_author(caller(request)))
    return experiment_out(done)


@router.post(
    "/{experimentId}/pause", response={200: ExperimentOut, **ERRORS}, auth=member_write_auth
)
def pause(request: HttpRequest, experimentId: str) -> dict[str, Any]:
    """No new item starts; those started finish (409 unless running or paused)."""
    return _act(request, experimentId, ledger.pause_experiment)


@router.post(
    "/{experimentId}/resume", response={200: ExperimentOut, **ERRORS}, auth=member_write_auth
)
def resume(request: HttpRequest, experimentId: str) -> dict[str, Any]:
    """A paused experiment runs again: its next items start."""
    return _act(request, experimentId, service.resume)


@router.post(
    "/{experimentId}/cancel", response={200: ExperimentOut, **ERRORS}, auth=member_write_auth
)
def cancel(request: HttpRequest, experimentId: str) -> dict[str, Any]:
    """Stop: items not started are cancelled, open runs too; finished items stay."""
    return _act(request, experimentId, ledger.cancel_experiment)


@router.post("/{experimentId}/adopt", response={200: AdoptOut, **ERRORS}, auth=member_write_auth)
def adopt(request: HttpRequest, experimentId: str, payload: AdoptIn) -> dict[str, Any]:
    """Make candidates the active answer of their threads (itemIds, or winners: every item
    the candidate won), as Restore does; Restore of the old branch undoes it."""
    experiment = _experiment(request, experimentId, [INGEST])
    done = ledger.adopt(
        experiment=experiment,
        author=_author(caller(request)),
        item_ids=payload.itemIds,
        winners=payload.winners,
    )
    return {
        "adopted": done.adopted,
        "skipped": [{"itemId": i, "reason": why} for i, why in done.skipped],
    }


@router.post(
    "/{experimentId}/discard", response={200: DiscardOut, **ERRORS}, auth=member_write_auth
)
def discard(request: HttpRequest, experimentId: str, payload: DiscardIn) -> dict[str, Any]:
    """Stop the experiment and leave its candidates as superseded branches, or delete them
    (delete: a project admin, or a token with the admin scope)."""
    experiment = _experiment(request, experimentId, [INGEST])
    principal = caller(request)
    if payload.delete and not principal.is_session and ADMIN not in principal.scopes:
        raise PermissionDenied("deleting candidates needs the 'admin' scope", scope=ADMIN)
    deleted = ledger.discard(
        experiment=experiment, author=_author(principal), delete=payload.delete
    )
    experiment.refresh_from_db(fields=["status"])
    return {"status": experiment.status, "deleted": deleted}


@router.post(
    "/{experimentId}/items/{itemId}/judge",
    response={200: JudgeOut, **ERRORS},
    auth=member_write_auth,
)
def judge(request: HttpRequest, experimentId: str, itemId: str, payload: JudgeIn) -> dict[str, Any]:
    """A person's verdict on a pair (a: the baseline is better, b: the candidate, t: a tie),
    recorded as Compare records it. Only a signed-in member judges: a token gets 403."""
    experiment = _experiment(request, experimentId, [READ])
    item = item_by_id(experiment, row_id(itemId, "itemId", "experiment item"))
    if item is None:
        raise NotFound(f"experiment item {itemId} does not exist", itemId=itemId)
    principal = caller(request)
    if not principal.is_session or principal.user is None:
        raise PermissionDenied(
            "a verdict is a person's: judge as a signed-in member (the results page), not with"
            " a token",
            action="judge",
        )
    _require(principal, experiment.project, [INGEST])
    judged = ledger.judge_item(item=item, user=principal.user, verdict=payload.verdict)
    return {
        "itemId": judged.pk,
        "outcome": judged.outcome,
        "personOutcome": judged.person_outcome,
    }
