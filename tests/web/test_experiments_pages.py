"""The experiments pages (issue 29): the project's list, the create form (from a thread-list
filter, from the list's selection, refusals with nothing written, the double-submit key), an
experiment's page (progress, summary, filters and sorting that change the rows), and its
actions (pause, resume, cancel, adopt one row, adopt every winner after a confirmation,
discard); the role table (viewers read, editors create and adopt, admins delete, outsiders
404, anonymous to the login page); and the pages read only through selectors."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client

from tests.base import Team
from tests.factories import ask, make_thread, say
from tests.generation.support import drain_experiment as _drain
from tests.test_reads_in_selectors import recording
from transcripts.generation import experiments
from transcripts.generation.experiments import ExperimentRequest
from transcripts.ledger.organise import tag_thread
from transcripts.ledger.scores import Author
from transcripts.models import (
    AuditRecord,
    Experiment,
    ExperimentItem,
    ExperimentStatus,
    Message,
    Outcome,
    Thread,
)

pytestmark = pytest.mark.django_db(transaction=True)
FAST = {"delayMs": 0}


def _thread(team: Team, title: str) -> Thread:
    thread = make_thread(title, project=team.alpha)
    ask(thread, f"What about {title}?")
    say(thread, f"The old answer about {title}.")
    thread.refresh_from_db()
    return thread


def _experiment(team: Team, threads: list[Thread], *, run: bool = True) -> Experiment:
    experiment, _ = experiments.create(
        project=team.alpha,
        author=Author(user=team.editor),
        request=ExperimentRequest(
            name="brief answers",
            model="demo-brief",
            parameters=FAST,
            thread_ids=tuple(t.id for t in threads),
            evaluators=[{"type": "exact-match"}],
        ),
    )
    if run:
        _drain(experiment)
    experiment.refresh_from_db()
    return experiment


def _active(thread: Thread) -> list[str]:
    return list(
        Message.objects.filter(thread=thread, active=True)
        .order_by("depth")
        .values_list("id", flat=True)
    )


def _form(**changes: str) -> dict[str, str]:
    return {
        "name": "v2 prompt",
        "filter": "",
        "threads": "",
        "tag": "",
        "fork_rule": "last-user",
        "choice": "demo:demo-brief",
        "system_prompt_mode": "replace",
        "concurrency": "4",
        "key": "",
        **changes,
    }


def _base(experiment: Experiment) -> str:
    return f"/p/alpha/experiments/{experiment.id}/"


# --- the role table ---------------------------------------------------------------------------


def test_viewers_read_editors_write_outsiders_get_404_everywhere(team: Team) -> None:
    thread = _thread(team, "refunds")
    experiment = _experiment(team, [thread], run=False)
    base = _base(experiment)
    reads = ["/p/alpha/experiments/", base, base + "progress/"]
    writes = [
        ("/p/alpha/experiments/new/", _form(threads=thread.id)),
        ("/p/alpha/experiments/new/selection/", {"ids": thread.id}),
        (base + "control/", {"action": "pause"}),
        (base + "adopt/", {"winners": "1"}),
        (base + "discard/", {}),
    ]
    viewer = team.client(team.viewer)
    for url in reads:
        assert viewer.get(url).status_code == 200, url
    assert viewer.get("/p/alpha/experiments/new/").status_code == 403
    for url, data in writes:
        assert viewer.post(url, data).status_code == 403, url
    for person in (team.outsider, team.stranger):
        client = team.client(person)
        for url in [*reads, "/p/alpha/experiments/new/"]:
            assert client.get(url).status_code == 404, (person, url)
        for url, data in writes:
            assert client.post(url, data).status_code == 404, (person, url)
    anonymous = Client()
    for url in [*reads, "/p/alpha/experiments/new/"]:
        response = anonymous.get(url)
        assert response.status_code == 302 and "/login" in response["Location"], url
    # Another project's experiment, and junk ids, are 404s for a member too.
    assert team.client(team.owner).get(f"/p/beta/experiments/{experiment.id}/").status_code == 404
    assert viewer.get("/p/alpha/experiments/01ARZ3NDEKTSV4RRFFQ69G5FAV/").status_code == 404
    assert viewer.get("/p/alpha/experiments/compare-me/").status_code == 404
    assert Experiment.objects.get().status == ExperimentStatus.RUNNING
    # The editor's forms: the list links to them, the viewer's list does not.
    assert b"New experiment" in team.client(team.editor).get("/p/alpha/experiments/").content
    assert b"New experiment" not in viewer.get("/p/alpha/experiments/").content


def test_the_list_shows_status_progress_candidate_and_verdicts(team: Team) -> None:
    threads = [_thread(team, f"t{i}") for i in range(2)]
    experiment = _experiment(team, threads)
    ExperimentItem.objects.filter(experiment=experiment, position=0).update(outcome=Outcome.WIN)
    page = team.client(team.viewer).get("/p/alpha/experiments/").content.decode()
    assert "brief answers" in page and "completed" in page
    assert "2/2" in page and "demo · demo-brief" in page
    assert re.search(r"1 / 0 / 0", page)
    project = team.client(team.viewer).get("/p/alpha/").content.decode()
    assert 'href="/p/alpha/experiments/"' in project


# --- creating -----------------------------------------------------------------------------------


def test_create_from_a_filter_makes_the_experiment_and_shows_its_page(team: Team) -> None:
    refunds = [_thread(team, f"refund {i}") for i in range(2)]
    _thread(team, "weather")
    client = team.client(team.editor)
    form = client.get("/p/alpha/experiments/new/?filter=q%3Drefund").content.decode()
    assert 'value="q=refund"' in form
    key = re.search(r'name="key" value="([^"]+)"', form)
    assert key is not None
    response = client.post(
        "/p/alpha/experiments/new/",
        _form(filter="q=refund", key=key.group(1), temperature="0.3", system_prompt="Be brief."),
    )
    assert response.status_code == 303
    experiment = Experiment.objects.get()
    assert response["Location"] == _base(experiment)
    assert experiment.source == {"filter": "q=refund"}
    assert experiment.parameters["temperature"] == 0.3
    assert experiment.system_prompt == "Be brief."
    assert sorted(str(t) for t in experiment.items.values_list("thread_id", flat=True)) == sorted(
        t.id for t in refunds
    )
    assert AuditRecord.objects.filter(action="create_experiment").count() == 1
    # The same form sent twice (its key): still one experiment, and the same page.
    again = client.post("/p/alpha/experiments/new/", _form(filter="q=refund", key=key.group(1)))
    assert again.status_code == 303 and again["Location"] == _base(experiment)
    assert Experiment.objects.count() == 1


def test_create_from_the_list_selection_and_from_ids(team: Team) -> None:
    threads = [_thread(team, f"s{i}") for i in range(3)]
    client = team.client(team.editor)
    chosen = [threads[0].id, threads[2].id]
    response = client.post("/p/alpha/experiments/new/selection/", {"ids": chosen})
    assert response.status_code == 303
    form = client.get(response["Location"]).content.decode()
    assert chosen[0] in form and chosen[1] in form and threads[1].id not in form
    made = client.post("/p/alpha/experiments/new/", _form(threads="\n".join(chosen)))
    assert made.status_code == 303
    experiment = Experiment.objects.get()
    assert [str(i.thread_id) for i in experiment.items.order_by("position")] == chosen
    assert experiment.source == {"threadIds": 2}


def test_create_with_the_message_rule_takes_message_ids(team: Team) -> None:
    thread = _thread(team, "m")
    question = Message.objects.get(thread=thread, role="user")
    client = team.client(team.editor)
    made = client.post("/p/alpha/experiments/new/", _form(fork_rule="message", threads=question.id))
    assert made.status_code == 303
    assert Experiment.objects.get().items.get().fork_from_id == question.id


@pytest.mark.parametrize(
    ("changes", "says"),
    [
        ({"name": ""}, "Name"),
        ({"threads": "", "filter": ""}, "no thread"),
        ({"choice": "demo:no-such-model"}, "Choose one of the listed models"),
        ({"choice": "external:"}, "Choose one of the listed models"),
        ({"concurrency": "0"}, "Concurrency"),
        ({"temperature": "7"}, "Temperature"),
        ({"threads": "01ARZ3NDEKTSV4RRFFQ69G5FAV"}, "no thread"),
        ({"filter": "status=bogus"}, "status"),
        ({"fork_rule": "message"}, "no message"),
        ({"fork_rule": "sideways"}, "Fork rule"),
    ],
)
def test_a_bad_form_is_a_422_and_writes_nothing(
    team: Team, changes: dict[str, str], says: str
) -> None:
    thread = _thread(team, "x")
    data = _form(**{"threads": thread.id, **changes})
    response = team.client(team.editor).post("/p/alpha/experiments/new/", data)
    assert response.status_code == 422, response.content[:400]
    assert says.lower() in response.content.decode().lower()
    assert 'role="alert"' in response.content.decode()
    assert not Experiment.objects.exists()
    assert not AuditRecord.objects.filter(action="create_experiment").exists()


def test_the_thread_list_links_to_the_form_with_its_filter_and_offers_the_bulk_action(
    team: Team,
) -> None:
    _thread(team, "refund")
    client = team.client(team.editor)
    client.get("/?project=alpha")
    page = client.get("/?q=refund").content.decode()
    link = re.search(r'href="([^"]+)">Run experiment on these threads', page)
    assert link is not None and "/p/alpha/experiments/new/?filter=q%3Drefund" in link.group(1)
    assert 'formaction="/p/alpha/experiments/new/selection/"' in page
    viewer = team.client(team.viewer)
    viewer.get("/?project=alpha")
    assert "Run experiment" not in viewer.get("/?q=refund").content.decode()


# --- the experiment's page ----------------------------------------------------------------------


def test_the_page_shows_progress_summary_and_both_answers(team: Team) -> None:
    threads = [_thread(team, f"p{i}") for i in range(2)]
    experiment = _experiment(team, threads)
    page = team.client(team.viewer).get(_base(experiment)).content.decode()
    assert "2 of 2 done, 0 failed" in page and "<progress" in page
    assert "hx-get" not in page  # finished: no polling
    assert "The old answer about p0." in page  # the baseline, rendered
    candidate = (
        Message.objects.filter(run_id=experiment.items.get(position=0).run_id)
        .order_by("-position")
        .first()
    )
    assert candidate is not None and f"?leaf={candidate.id}" in page
    assert "Word diff" in page and "Win rate" in page and "exact-match" in page
    assert "candidate failed" in page or "candidate passed" in page
    assert 'aria-sort="ascending"' in page
    for key in ("position", "title", "status", "outcome", "candidate-length", "baseline-cost"):
        assert f"sort={key}" in page or f"sort=-{key}" in page, key
    assert "Adopt" not in page.split("Summary")[1]  # a viewer has no Adopt
    # A candidate's run page names its experiment; another run's does not.
    item = experiment.items.get(position=0)
    run_page = team.client(team.viewer).get(f"/runs/{item.run_id}/").content.decode()
    assert f'href="{_base(experiment)}"' in run_page and "a candidate" in run_page
    baseline_page = team.client(team.viewer).get(f"/runs/{item.baseline_run_id}/").content.decode()
    assert "<dt>Experiment</dt>" not in baseline_page


def test_a_running_experiment_polls_its_progress_and_has_a_refresh_link(
    team: Team, htmx: dict[str, str]
) -> None:
    experiment = _experiment(team, [_thread(team, "r")], run=False)
    client = team.client(team.viewer)
    page = client.get(_base(experiment)).content.decode()
    assert 'hx-trigger="every 1s"' in page and ">Refresh</a>" in page
    fragment = client.get(_base(experiment) + "progress/", headers=htmx)
    assert "0 of 1 done" in fragment.content.decode() and "HX-Refresh" not in fragment
    _drain(experiment)
    done = client.get(_base(experiment) + "progress/", headers=htmx)
    assert "1 of 1 done" in done.content.decode() and done["HX-Refresh"] == "true"
    assert "every 1s" not in done.content.decode()


def test_filters_and_sorting_change_the_rows(team: Team) -> None:
    threads = [_thread(team, f"row {name}") for name in ("b", "a", "c")]
    tag_thread(thread=threads[1], user=team.owner, tag="vip")
    experiment = _experiment(team, threads)
    items = list(experiment.items.order_by("position"))
    ExperimentItem.objects.filter(experiment=experiment).update(disagreement=False)
    ExperimentItem.objects.filter(pk=items[2].pk).update(outcome=Outcome.WIN, disagreement=True)
    client = team.client(team.viewer)

    def titles(query: str) -> list[str]:
        page = client.get(_base(experiment) + query).content.decode()
        return re.findall(r'<td><a href="/t/[^"]+">(row \w)</a></td>', page)

    assert titles("") == ["row b", "row a", "row c"]
    assert titles("?sort=title") == ["row a", "row b", "row c"]
    assert titles("?sort=-title") == ["row c", "row b", "row a"]
    assert titles("?outcome=win") == ["row c"]
    assert titles("?disagreements=1") == ["row c"]
    assert titles("?tag=vip") == ["row a"]
    assert titles("?status=failed") == []
    passed = [{"name": "exact-match", "type": "exact-match", "passed": True}]
    ExperimentItem.objects.filter(pk=items[0].pk).update(evaluations=passed)
    assert titles("?failing=exact-match") == ["row a", "row c"]
    assert (
        '<option value="exact-match" selected>'
        in client.get(_base(experiment) + "?failing=exact-match").content.decode()
    )
    page = client.get(_base(experiment) + "?sort=-title").content.decode()
    assert 'aria-sort="descending"' in page
    # A bad filter is said, not a 500.
    bad = client.get(_base(experiment) + "?sort=nonsense")
    assert bad.status_code == 200 and "sort must be one of" in bad.content.decode()


def test_pause_resume_cancel(team: Team) -> None:
    experiment = _experiment(team, [_thread(team, f"c{i}") for i in range(2)], run=False)
    client = team.client(team.editor)
    base = _base(experiment)
    assert client.post(base + "control/", {"action": "pause"}).status_code == 303
    assert Experiment.objects.get().status == ExperimentStatus.PAUSED
    assert client.post(base + "control/", {"action": "resume"}).status_code == 303
    assert Experiment.objects.get().status == ExperimentStatus.RUNNING
    assert client.post(base + "control/", {"action": "sideways"}).status_code == 422
    assert client.post(base + "control/", {"action": "cancel"}).status_code == 303
    assert Experiment.objects.get().status == ExperimentStatus.CANCELLED
    assert client.post(base + "control/", {"action": "resume"}).status_code == 409
    actions = set(AuditRecord.objects.values_list("action", flat=True))
    assert {"pause_experiment", "resume_experiment", "cancel_experiment"} <= actions


def test_adopt_one_row_then_every_winner_moves_the_active_paths(team: Team) -> None:
    threads = [_thread(team, f"a{i}") for i in range(3)]
    before = {t.id: _active(t) for t in threads}
    experiment = _experiment(team, threads)
    items = list(experiment.items.order_by("position"))
    client = team.client(team.editor)
    base = _base(experiment)
    assert client.post(base + "adopt/", {"item": "99999999"}).status_code == 422
    assert client.post(base + "adopt/", {"item": "junk"}).status_code == 422
    response = client.post(base + "adopt/", {"item": str(items[0].pk), "next": base})
    assert response.status_code == 303 and response["Location"] == base
    active = _active(threads[0])
    assert Message.objects.get(pk=active[-1]).run_id == items[0].run_id
    assert _active(threads[1]) == before[threads[1].id]
    page = client.get(base).content.decode()
    assert "Adopted · <a href=" in page and "restore the original" in page
    # Every winner: a confirmation first (nothing changes), then the adoption.
    ExperimentItem.objects.filter(pk=items[2].pk).update(outcome=Outcome.WIN)
    confirm = client.post(base + "adopt/", {"winners": "1"})
    assert confirm.status_code == 200 and "Adopt 1 winner" in confirm.content.decode()
    assert _active(threads[2]) == before[threads[2].id]
    done = client.post(base + "adopt/", {"winners": "1", "confirm": "1"})
    assert done.status_code == 303
    assert Message.objects.get(pk=_active(threads[2])[-1]).run_id == items[2].run_id
    assert _active(threads[1]) == before[threads[1].id]
    assert AuditRecord.objects.filter(action="adopt_experiment").count() == 2


def test_discard_asks_first_and_only_admins_delete(team: Team) -> None:
    experiment = _experiment(team, [_thread(team, "d")])
    run_id = experiment.items.get().run_id
    base = _base(experiment)
    editor = team.client(team.editor)
    assert editor.post(base + "discard/", {"delete": "1", "confirm": "1"}).status_code == 403
    asked = editor.post(base + "discard/", {})
    assert asked.status_code == 200 and "Discard the candidates?" in asked.content.decode()
    assert not AuditRecord.objects.filter(action="discard_experiment").exists()
    assert editor.post(base + "discard/", {"confirm": "1"}).status_code == 303
    assert Message.objects.filter(run_id=run_id).exists()  # kept as a branch
    owner = team.client(team.owner)
    assert "delete them" in owner.get(base).content.decode()
    assert "delete them" not in editor.get(base).content.decode()
    assert owner.post(base + "discard/", {"delete": "1", "confirm": "1"}).status_code == 303
    assert not Message.objects.filter(run_id=run_id).exists()


def test_the_pages_read_only_through_selectors(team: Team, htmx: dict[str, str]) -> None:
    experiment = _experiment(team, [_thread(team, f"q{i}") for i in range(3)])
    client = team.client(team.owner)
    base = _base(experiment)
    with recording() as recorder:
        for url in (
            "/p/alpha/experiments/",
            "/p/alpha/experiments/new/?threads=a,b",
            base,
            base + "?sort=-candidate-length&disagreements=1",
            base + "progress/",
        ):
            response: Any = client.get(url, headers=htmx if url.endswith("progress/") else {})
            assert response.status_code == 200, url
    assert not recorder.offences, "\n".join(map(str, recorder.offences))


def test_the_form_offers_every_evaluator_and_an_llm_judge(team: Team) -> None:
    _thread(team, "refund 1")
    client = team.client(team.editor)
    form = client.get("/p/alpha/experiments/new/").content.decode()
    for kind in ("exact-match", "json", "length-ratio", "tool-calls"):
        assert f'value="{kind}"' in form
    assert 'name="contains"' in form and 'name="regex"' in form and 'name="judge"' in form
    response = client.post(
        "/p/alpha/experiments/new/",
        {
            **_form(filter="q=refund"),
            "evaluators": ["exact-match", "json", "length-ratio", "tool-calls"],
            "contains": "refund",
            "regex": r"\bthanks?\b",
            "judge": "demo:demo-1",
            "rubric": "Prefer the answer that resolves the refund.",
        },
    )
    assert response.status_code == 303, response.content.decode()[:2000]
    types = [e["type"] for e in Experiment.objects.get().evaluators]
    assert types == [
        "exact-match", "json", "length-ratio", "tool-calls", "contains", "regex", "llm-judge",
    ]  # fmt: skip
    bad = client.post("/p/alpha/experiments/new/", {**_form(filter="q=refund"), "regex": "(("})
    assert bad.status_code == 422 and Experiment.objects.count() == 1


def test_a_hidden_thread_s_rows_are_for_moderators_only(team: Team) -> None:
    from transcripts.ledger.moderation import hide_thread

    shown, hidden = _thread(team, "open topic"), _thread(team, "secret topic")
    experiment = _experiment(team, [shown, hidden])
    second = _experiment(team, [shown, hidden])
    for item in experiment.items.all():
        experiment_ledger_judge(item, team)
    hide_thread(user=team.moderator, thread=hidden)
    hidden_item = experiment.items.get(thread_id=hidden.id)
    pages = [
        _base(experiment),
        f"{_base(experiment)}judge/?item={hidden_item.pk}",
        f"/p/alpha/experiments/compare/?a={experiment.id}&b={second.id}",
    ]
    for user in (team.viewer, team.editor):
        client = team.client(user)
        page = client.get(pages[0]).content.decode()
        assert "open topic" in page and "secret topic" not in page
        assert client.get(pages[1]).status_code == 404
        compared = client.get(pages[2]).content.decode()
        assert "open topic" in compared and "secret topic" not in compared
    moderator = team.client(team.moderator)
    assert "secret topic" in moderator.get(pages[0]).content.decode()
    assert moderator.get(pages[1]).status_code == 200
    # Adopting every winner as an editor leaves the hidden thread's answer alone.
    response = team.client(team.editor).post(
        f"{_base(experiment)}adopt/", {"winners": "1", "confirm": "1"}
    )
    assert response.status_code in (200, 303)
    assert ExperimentItem.objects.get(pk=hidden_item.pk).adopted_at is None
    assert ExperimentItem.objects.get(experiment=experiment, thread_id=shown.id).adopted_at


def experiment_ledger_judge(item: ExperimentItem, team: Team) -> None:
    from transcripts.ledger.experiments import judge_item

    judge_item(item=item, user=team.editor, verdict="b")
