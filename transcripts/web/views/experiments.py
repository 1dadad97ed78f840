"""Experiments (issue 29): the project's list, the create form, an experiment's page (progress,
summary, filtered and sorted rows with both answers side by side) and its actions (pause,
resume, cancel, adopt a candidate or every winner, discard the candidates).

Viewers read; editors create, run and adopt; admins may delete candidates; outsiders get a
404 on every address. The writes go through `transcripts.generation.experiments` (create,
resume) and `transcripts.ledger.experiments`, which audit them. Judge mode and the comparison
of two experiments live in `views/experiment_judge.py`.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from django import forms
from django.contrib import messages
from django.http import Http404, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.crypto import get_random_string
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from transcripts.errors import DomainError, InvalidInput
from transcripts.generation import experiments as service
from transcripts.generation.experiments import ExperimentRequest
from transcripts.ledger import experiments as ledger
from transcripts.ledger.scores import Author
from transcripts.models import Experiment, ExperimentStatus, ForkRule, Project
from transcripts.permissions import Access, Role, User, readable_threads
from transcripts.selectors import experiment_results as results
from transcripts.selectors import queues as queue_reads
from transcripts.selectors.experiments import experiment_in, experiments_of, progress
from transcripts.selectors.queues import messages_in
from transcripts.web.access import get_project_for_user, login_required, require_role
from transcripts.web.http import HtmxHttpRequest, safe_next
from transcripts.web.presenters import experiments as present
from transcripts.web.presenters.runs import parse_model_choice

LIST_TEMPLATE = "transcripts/experiments.html"
NEW_TEMPLATE = "transcripts/experiment_new.html"
PAGE_TEMPLATE = "transcripts/experiment.html"
CONFIRM_TEMPLATE = "transcripts/experiment_confirm.html"
_IDS = re.compile(r"[\s,]+")
MAX_ID_TEXT = 300_000


class ExperimentForm(forms.Form):
    """A new experiment: its name, threads (a filter, ids, a tag or a queue), fork rule,
    candidate (model, parameters, system prompt), evaluators and concurrency."""

    name = forms.CharField(max_length=ledger.MAX_NAME)
    filter = forms.CharField(label="Thread-list filter", max_length=2000, required=False)
    threads = forms.CharField(label="Thread ids", max_length=MAX_ID_TEXT, required=False)
    tag = forms.CharField(max_length=40, required=False)
    queue = forms.TypedChoiceField(coerce=int, required=False, empty_value=None)
    fork_rule = forms.ChoiceField(
        label="Fork rule", choices=[(v, label) for v, label, _ in present.FORK_RULES]
    )
    choice = forms.CharField(label="Model", max_length=250)
    temperature = forms.FloatField(min_value=0, max_value=2, required=False)
    max_tokens = forms.IntegerField(
        label="Max tokens", min_value=1, max_value=100_000, required=False
    )
    system_prompt = forms.CharField(
        label="System prompt", max_length=20_000, required=False, strip=False
    )
    system_prompt_mode = forms.ChoiceField(
        label="System prompt mode", choices=[("replace", "replace"), ("prefix", "prefix")]
    )
    evaluators = forms.MultipleChoiceField(required=False)
    contains = forms.CharField(label="Contains", max_length=2000, required=False)
    regex = forms.CharField(label="Regex", max_length=2000, required=False)
    judge = forms.CharField(label="LLM judge", max_length=250, required=False)
    rubric = forms.CharField(label="Rubric", max_length=10_000, required=False)
    concurrency = forms.IntegerField(min_value=1, max_value=ledger.MAX_CONCURRENCY, initial=4)
    key = forms.CharField(max_length=ledger.MAX_KEY, required=False)

    def __init__(self, *args: Any, queues: list[tuple[int, str]], **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.fields["queue"].choices = [("", "—"), *queues]  # type: ignore[attr-defined]
        self.fields["evaluators"].choices = [  # type: ignore[attr-defined]
            (c.type, c.label) for c in present.CHECKS
        ]

    def clean_choice(self) -> str:
        choice = str(self.cleaned_data["choice"])
        offered = {c.value for _, group in present.candidate_models() for c in group}
        if choice not in offered:
            raise forms.ValidationError("Choose one of the listed models.")
        return choice

    def clean_judge(self) -> str:
        judge = str(self.cleaned_data.get("judge") or "")
        offered = {c.value for _, group in present.candidate_models() for c in group}
        if judge and judge not in offered:
            raise forms.ValidationError("Choose one of the listed models for the judge.")
        return judge


def _errors(form: forms.Form) -> str:
    """The form's errors in one sentence per field."""
    return " ".join(
        f"{form.fields[name].label or name.capitalize()}: {' '.join(str(e) for e in errors)}"
        if name in form.fields
        else " ".join(str(e) for e in errors)
        for name, errors in form.errors.items()
    )


def _form(
    project: Project, data: Any = None, initial: dict[str, Any] | None = None
) -> ExperimentForm:
    queues = [(q.pk, q.name) for q in queue_reads.queues_of(project)]
    return ExperimentForm(data, queues=queues, initial=initial)


def _new_page(
    request: HtmxHttpRequest,
    project: Project,
    form: ExperimentForm,
    *,
    status: int = 200,
    error: str = "",
) -> HttpResponse:
    key = form.data.get("key") if form.is_bound else ""
    context = {
        "project": project,
        "form": form,
        "error": error,
        "key": key or get_random_string(32),
        "fork_rules": present.FORK_RULES,
        "models": present.candidate_models(),
        "checks": present.offered_checks(),
        "offers_contains": present.offers("contains"),
        "offers_regex": present.offers("regex"),
        "offers_judge": present.offers("llm-judge"),
    }
    return render(request, NEW_TEMPLATE, context, status=status)


@login_required
@require_GET
def experiments_page(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """The project's experiments, newest first."""
    project, access = get_project_for_user(request, slug)
    found = experiments_of(project)
    context = {
        "project": project,
        "access": access,
        "rows": present.list_rows(found, results.list_counts(found)),
    }
    return render(request, LIST_TEMPLATE, context)


def _request_of(form: ExperimentForm, project: Project, user: User) -> ExperimentRequest:
    """The service's request from a valid form (InvalidInput for ids that are not there)."""
    data = form.cleaned_data
    parsed = parse_model_choice(data["choice"])
    assert parsed is not None  # clean_choice vouched for it
    ids = tuple(i for i in _IDS.split(data["threads"]) if i)
    forks: dict[str, str] = {}
    if data["fork_rule"] == ForkRule.MESSAGE:
        owners = messages_in(readable_threads(user, project=project), ids)
        missing = [i for i in ids if i not in owners]
        if missing:
            raise InvalidInput(f"no message {missing[0]} in this project", field="threads")
        forks = {owners[m]: m for m in ids}
        ids = ()
    parameters = {"temperature": data["temperature"], "maxTokens": data["max_tokens"]}
    return ExperimentRequest(
        name=data["name"],
        generator=parsed[0],
        model=parsed[1],
        parameters={k: v for k, v in parameters.items() if v is not None},
        system_prompt=data["system_prompt"].strip(),
        system_prompt_mode=data["system_prompt_mode"],
        fork_rule=data["fork_rule"],
        filter=data["filter"],
        tag=data["tag"],
        queue_id=data["queue"],
        thread_ids=ids,
        forks=forks,
        evaluators=present.evaluator_configs(
            data["evaluators"],
            contains=data["contains"],
            regex=data["regex"],
            judge=data["judge"],
            rubric=data["rubric"],
        ),
        concurrency=data["concurrency"],
        idempotency_key=data["key"],
    )


def _initial(request: HtmxHttpRequest) -> dict[str, Any]:
    """The form's first values: a filter or ids passed by the thread list."""
    return {
        "filter": request.GET.get("filter", "")[:2000],
        "threads": "\n".join(i for i in _IDS.split(request.GET.get("threads", "")) if i),
        "tag": request.GET.get("tag", "")[:40],
        "fork_rule": ForkRule.LAST_USER,
        "choice": "demo:"
        + next(
            (c.model for _, g in present.candidate_models() for c in g if c.generator == "demo"),
            "",
        ),
        "system_prompt_mode": "replace",
        "concurrency": 4,
    }


@login_required
@require_http_methods(["GET", "POST"])
def new_experiment(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """GET: the form (its threads from `?filter=`, `?threads=id,id` or `?tag=`). POST: the
    experiment, then its page; bad input: the form again with why (nothing written)."""
    project, access = get_project_for_user(request, slug)
    require_role(access, Role.EDITOR, "create experiments")
    if request.method == "GET":
        return _new_page(request, project, _form(project, initial=_initial(request)))
    form = _form(project, request.POST)
    if not form.is_valid():
        return _new_page(request, project, form, status=422, error=_errors(form))
    try:
        experiment, created = service.create(
            project=project,
            author=Author(user=request.user),
            request=_request_of(form, project, request.user),
        )
    except DomainError as exc:
        return _new_page(request, project, form, status=exc.status, error=exc.message)
    if created:
        messages.success(request, f"Experiment “{experiment.name}” started.")
    return HttpResponseRedirect(reverse("experiment", args=[slug, experiment.id]), status=303)


@login_required
@require_POST
def from_selection(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """The thread list's bulk "Run experiment": the form with the checked threads."""
    _, access = get_project_for_user(request, slug)
    require_role(access, Role.EDITOR, "create experiments")
    ids = [i for i in request.POST.getlist("ids") if i][: ledger.MAX_THREADS]
    if not ids:
        raise InvalidInput("Select at least one thread.", field="ids")
    target = reverse("experiment_new", args=[slug])
    return HttpResponseRedirect(f"{target}?threads={','.join(ids)}", status=303)


# --- one experiment --------------------------------------------------------------------------


def experiment_for_member(
    request: HtmxHttpRequest, slug: str, experiment_id: str
) -> tuple[Experiment, Access]:
    """The project's experiment for a member, or a 404."""
    project, access = get_project_for_user(request, slug)
    experiment = experiment_in(project, experiment_id)
    if experiment is None:
        raise Http404("no such experiment")
    experiment.project = project
    return experiment, access


def _page_number(request: HtmxHttpRequest) -> int:
    raw = request.GET.get("page", "1")
    return int(raw) if raw.isdigit() and len(raw) < 7 else 1


def _progress(experiment: Experiment) -> present.ProgressView:
    return present.ProgressView(progress(experiment), experiment.status == ExperimentStatus.RUNNING)


@login_required
@require_GET
def experiment_page(request: HtmxHttpRequest, slug: str, experiment_id: str) -> HttpResponse:
    """An experiment: header, progress, actions, summary, filters and a page of rows."""
    experiment, access = experiment_for_member(request, slug, experiment_id)
    params = {k: request.GET.get(k, "") for k in request.GET}
    try:
        spec = results.parse_result_filter(params)
    except InvalidInput as exc:
        spec = results.ResultFilter()
        messages.error(request, exc.message)
    # Hidden threads' rows are for those who see hidden threads (moderators and admins).
    spec = replace(spec, sees_hidden=access.sees_hidden)
    page = results.result_page(experiment, spec, page=_page_number(request))
    results.attach_runs(page.rows)
    kept = present.filter_params(params)
    summary = present.summary_view(results.summary(experiment))
    here = reverse("experiment", args=[slug, experiment.id])
    context = {
        "project": experiment.project,
        "experiment": experiment,
        "access": access,
        "status": present.STATUS_WORDS.get(experiment.status, experiment.status),
        "fork_rule": present.fork_rule_label(experiment.fork_rule),
        "source": present.source_text(experiment.source),
        "progress": _progress(experiment),
        "summary": summary,
        "evaluator_names": [e.name for e in summary.evaluators],
        "spec": spec,
        "headers": present.sort_headers(kept, spec),
        "page": page,
        "rows": present.row_views(page),
        "here": here + present.query_with(kept) if kept else here,
        "kept": kept,
        "previous": present.query_with(kept, page=str(page.page - 1)) if page.page > 1 else "",
        "next": present.query_with(kept, page=str(page.page + 1)) if page.page < page.pages else "",
        "outcomes": [
            (o, results.outcome_label("" if o == "unjudged" else o)) for o in results.OUTCOMES
        ],
        "statuses": [(s, present.ITEM_WORDS[s]) for s in present.ITEM_WORDS],
        "judge_url": reverse("experiment_judge", args=[slug, experiment.id]),
        "compare_url": reverse("experiments_compare", args=[slug]) + f"?a={experiment.id}",
    }
    return render(request, PAGE_TEMPLATE, context)


@login_required
@require_GET
def experiment_progress(request: HtmxHttpRequest, slug: str, experiment_id: str) -> HttpResponse:
    """The progress fragment the page polls while the experiment runs; once it stops running,
    the page reloads (htmx) to show the results."""
    experiment, _ = experiment_for_member(request, slug, experiment_id)
    context = {
        "project": experiment.project,
        "experiment": experiment,
        "progress": _progress(experiment),
    }
    response = render(request, PAGE_TEMPLATE + "#progress", context)
    if experiment.status != ExperimentStatus.RUNNING and request.htmx:
        response["HX-Refresh"] = "true"
    return response


CONTROLS = {"pause", "resume", "cancel"}


@login_required
@require_POST
def control(request: HtmxHttpRequest, slug: str, experiment_id: str) -> HttpResponse:
    """Pause, resume or cancel the experiment (editors)."""
    experiment, access = experiment_for_member(request, slug, experiment_id)
    require_role(access, Role.EDITOR, "pause, resume or cancel experiments")
    action = request.POST.get("action", "")
    if action not in CONTROLS:
        raise InvalidInput("action must be pause, resume or cancel", field="action")
    author = Author(user=request.user)
    if action == "pause":
        ledger.pause_experiment(experiment=experiment, author=author)
    elif action == "resume":
        service.resume(experiment=experiment, author=author)
    else:
        ledger.cancel_experiment(experiment=experiment, author=author)
    messages.success(request, f"Experiment {_past(action)}.")
    return HttpResponseRedirect(reverse("experiment", args=[slug, experiment.id]), status=303)


def _past(action: str) -> str:
    return {"pause": "paused", "resume": "resumed", "cancel": "cancelled"}[action]


def _confirm(
    request: HtmxHttpRequest,
    experiment: Experiment,
    *,
    kind: str,
    back: str,
    fields: dict[str, str],
) -> HttpResponse:
    context = {
        "project": experiment.project,
        "experiment": experiment,
        "kind": kind,
        "back": back,
        "fields": fields,
        "winners": results.summary(experiment).wins if kind == "adopt" else 0,
        "action": reverse(f"experiment_{kind}", args=[experiment.project.slug, experiment.id]),
    }
    return render(request, CONFIRM_TEMPLATE, context)


@login_required
@require_POST
def adopt(request: HtmxHttpRequest, slug: str, experiment_id: str) -> HttpResponse:
    """Adopt one row's candidate (`item`), or every winner (`winners`, after a confirmation)."""
    experiment, access = experiment_for_member(request, slug, experiment_id)
    require_role(access, Role.EDITOR, "adopt candidates")
    page = reverse("experiment", args=[slug, experiment.id])
    back = safe_next(request, page)
    author = Author(user=request.user)
    if request.POST.get("winners"):
        if not request.POST.get("confirm"):
            return _confirm(request, experiment, kind="adopt", back=back, fields={"winners": "1"})
        done = ledger.adopt(experiment=experiment, author=author, winners=True)
    else:
        raw = request.POST.get("item", "")
        if not raw.isdigit() or len(raw) > 18:
            raise InvalidInput("item: choose a row to adopt", field="item")
        done = ledger.adopt(experiment=experiment, author=author, item_ids=[int(raw)])
    text = f"Adopted {len(done.adopted)} candidate{'s' if len(done.adopted) != 1 else ''}."
    if done.skipped:
        text += f" {len(done.skipped)} skipped: {done.skipped[0][1]}"
    messages.success(request, text)
    return HttpResponseRedirect(back, status=303)


@login_required
@require_POST
def discard(request: HtmxHttpRequest, slug: str, experiment_id: str) -> HttpResponse:
    """Discard the candidates (editors; deleting them: admins), after a confirmation."""
    experiment, access = experiment_for_member(request, slug, experiment_id)
    require_role(access, Role.EDITOR, "discard candidates")
    delete = bool(request.POST.get("delete"))
    if delete:
        require_role(access, Role.ADMIN, "delete candidates")
    page = reverse("experiment", args=[slug, experiment.id])
    if not request.POST.get("confirm"):
        fields = {"delete": "1"} if delete else {}
        return _confirm(request, experiment, kind="discard", back=page, fields=fields)
    deleted = ledger.discard(experiment=experiment, author=Author(user=request.user), delete=delete)
    text = "Candidates discarded: they stay in the tree as branches."
    if delete:
        text = f"Candidates discarded: {deleted} deleted."
    messages.success(request, text)
    return HttpResponseRedirect(page, status=303)
