"""Judge mode (one pair at a time, judged with a/b/t, n for the next) and two experiments
compared fork point by fork point (issue 29).

Members read both pages; editors judge (a POST: the verdict recorded as the preference
rating Compare writes, then a redirect to the next pair); outsiders, and experiments of
another project, get a 404.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from django.http import Http404, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from transcripts.errors import InvalidInput
from transcripts.ledger.experiments import judge_item
from transcripts.models import Experiment, ExperimentItem, Project
from transcripts.permissions import Access, Role
from transcripts.selectors.experiment_judge import compared_rows, judge_pair
from transcripts.selectors.experiment_results import (
    PAGE_SIZE,
    ResultFilter,
    compared_page,
    item_by_id,
    judge_progress,
    next_to_judge,
    parse_result_filter,
    summary,
)
from transcripts.selectors.experiments import experiment_in, experiments_of
from transcripts.web.access import get_project_for_user, login_required, require_role
from transcripts.web.http import HtmxHttpRequest
from transcripts.web.presenters.experiment_judge import (
    VERDICTS,
    candidate_text,
    compare_rows,
    experiment_url,
    filter_fields,
    judge_view,
    picker_choices,
    query_of,
    summary_view,
)
from transcripts.web.views.experiments import experiment_for_member

JUDGE_TEMPLATE = "transcripts/experiment_judge.html"
COMPARE_TEMPLATE = "transcripts/experiments_compare.html"


def _number(value: str, name: str, default: int) -> int:
    """A whole number from the query string (default when absent), or a 422."""
    if not value.strip():
        return default
    try:
        return int(value)
    except ValueError:
        raise InvalidInput(f"{name} must be a whole number", field=name) from None


def _item(experiment: Experiment, value: str, *, sees_hidden: bool) -> ExperimentItem:
    """The experiment's item with this id, or a 404 (also one of a hidden thread, for a
    reader who does not see hidden threads)."""
    try:
        item = item_by_id(experiment, int(value), sees_hidden=sees_hidden)
    except ValueError:
        item = None
    if item is None:
        raise Http404("no such pair")
    return item


def _judge_url(experiment: Experiment, spec: ResultFilter, **extra: str) -> str:
    url = reverse("experiment_judge", args=[experiment.project.slug, experiment.id])
    query = query_of([*filter_fields(spec), *extra.items()])
    return f"{url}?{query}" if query else url


@login_required
@require_http_methods(["GET", "POST"])
def judge_page(request: HtmxHttpRequest, slug: str, experiment_id: str) -> HttpResponse:
    """GET: the next pair nobody judged (after ?after=<position>, or ?item=<id>); POST
    (editors): item + verdict recorded, then the next pair."""
    experiment, access = experiment_for_member(request, slug, experiment_id)
    spec = replace(parse_result_filter(request.GET), sees_hidden=access.sees_hidden)
    if request.method == "POST":
        require_role(access, Role.EDITOR, "judge the pairs of an experiment")
        item = _item(experiment, request.POST.get("item", ""), sees_hidden=access.sees_hidden)
        judged = judge_item(item=item, user=request.user, verdict=request.POST.get("verdict", ""))
        next_url = _judge_url(experiment, spec, after=str(judged.position))
        return HttpResponseRedirect(next_url, status=303)
    shown = _shown(experiment, spec, request.GET)
    response = _render_judge(request, experiment, access, spec, shown)
    if request.htmx and shown is not None:
        response["HX-Push-Url"] = _judge_url(experiment, spec, item=str(shown.pk))
    return response


def _shown(
    experiment: Experiment, spec: ResultFilter, params: Mapping[str, str]
) -> ExperimentItem | None:
    """The pair asked for (?item=), else the next one nobody judged after ?after=."""
    if "item" in params:
        return _item(experiment, params["item"], sees_hidden=spec.sees_hidden)
    after = _number(params.get("after", ""), "after", -1)
    return next_to_judge(experiment, spec, after=max(-1, min(after, 2**31 - 1)))


def _render_judge(
    request: HtmxHttpRequest,
    experiment: Experiment,
    access: Access,
    spec: ResultFilter,
    item: ExperimentItem | None,
) -> HttpResponse:
    pair = judge_pair(item) if item is not None else None
    judged, total = judge_progress(experiment, spec)
    fields = filter_fields(spec)
    context: dict[str, Any] = {
        "project": experiment.project,
        "experiment": experiment,
        "back_url": experiment_url(experiment.project, experiment),
        "view": judge_view(pair) if pair is not None else None,
        "judged": judged,
        "total": total,
        "fields": fields,
        "filtered": bool(fields),
        "action": _judge_url(experiment, spec),
        "base_action": reverse("experiment_judge", args=[experiment.project.slug, experiment.id]),
        "may_judge": access.can_edit and item is not None and item.status == "done",
        "verdicts": VERDICTS,
    }
    template = JUDGE_TEMPLATE + ("#pair" if request.htmx else "")
    return render(request, template, context)


# --- two experiments ---------------------------------------------------------------------------


def _picked(project: Project, value: str) -> Experiment | None:
    """The project's experiment picked (None when not picked), or a 404."""
    if not value.strip():
        return None
    experiment = experiment_in(project, value.strip())
    if experiment is None:
        raise Http404("no such experiment")
    return experiment


@login_required
@require_GET
def compare_page(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """Two experiments of the project side by side: their summaries, then the fork points
    they share, a page at a time (?a=&b=&page=)."""
    project, access = get_project_for_user(request, slug)
    first = _picked(project, request.GET.get("a", ""))
    second = _picked(project, request.GET.get("b", ""))
    context: dict[str, Any] = {
        "project": project,
        "choices": picker_choices(experiments_of(project)),
        "first": first,
        "second": second,
    }
    if first is not None and second is not None:
        page = _number(request.GET.get("page", ""), "page", 1)
        paired, shared = compared_page(
            first, second, page=max(1, min(page, 2**31)), sees_hidden=access.sees_hidden
        )
        pages = max(1, -(-shared // PAGE_SIZE))
        page = max(1, min(page, pages))
        names = (first.name, second.name)
        query = {"a": first.id, "b": second.id}
        context.update(
            headers=[
                _header(project, first, "A"),
                _header(project, second, "B"),
            ],
            rows=compare_rows(compared_rows(paired), names),
            shared=shared,
            page=page,
            pages=pages,
            previous_url=f"?{query_of({**query, 'page': str(page - 1)})}" if page > 1 else "",
            next_url=f"?{query_of({**query, 'page': str(page + 1)})}" if page < pages else "",
        )
    return render(request, COMPARE_TEMPLATE, context)


def _header(project: Project, experiment: Experiment, letter: str) -> dict[str, Any]:
    """What the page says of one experiment above the rows."""
    return {
        "letter": letter,
        "experiment": experiment,
        "url": experiment_url(project, experiment),
        "candidate": candidate_text(experiment),
        "summary": summary_view(summary(experiment)),
    }
