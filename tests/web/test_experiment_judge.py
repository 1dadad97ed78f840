"""Judge mode and two experiments compared (issue 29), without JavaScript: the role table
(a viewer reads with no buttons and is refused a verdict, an editor judges, an outsider gets
a 404), a verdict recorded as the preference rating Compare writes then the next pair, skip,
the end, bad input refused with nothing written; two experiments on overlapping threads
show their shared fork points, another project's experiment is a 404; neither page queries
outside the selectors."""

from __future__ import annotations

import re

import pytest

from tests.base import Team
from tests.factories import ask, make_thread, say
from tests.generation.support import drain_experiment as drain
from tests.test_reads_in_selectors import recording
from transcripts.generation import experiments
from transcripts.generation.experiments import ExperimentRequest
from transcripts.ledger.scores import Author
from transcripts.models import (
    Experiment,
    ExperimentItem,
    Project,
    RunRating,
    Thread,
)

pytestmark = pytest.mark.django_db


def _thread(project: Project, title: str) -> Thread:
    thread = make_thread(title, project=project)
    ask(thread, f"What about {title}?")
    say(thread, f"{title} is fine.")
    return thread


def run_experiment(
    project: Project, user: object, threads: list[Thread], name: str = "brief", **extra: object
) -> Experiment:
    """An experiment on threads, every item generated (`seed`: the demo model's, so the
    candidates' answers are known; else each run's id)."""
    seed = extra.pop("seed", None)
    request = ExperimentRequest(
        name=name,
        model=str(extra.pop("model", "demo-brief")),
        parameters={"delayMs": 0, **({"seed": seed} if seed is not None else {})},
        thread_ids=tuple(t.id for t in threads),
        **extra,  # type: ignore[arg-type]
    )
    experiment, _ = experiments.create(project=project, author=Author(user=user), request=request)  # type: ignore[arg-type]
    drain(experiment)
    experiment.refresh_from_db()
    return experiment


@pytest.fixture
def judged(team: Team) -> tuple[Experiment, list[ExperimentItem]]:
    """Three done pairs in project alpha."""
    threads = [_thread(team.alpha, f"topic {i}") for i in range(3)]
    experiment = run_experiment(
        team.alpha, team.editor, threads, evaluators=[{"type": "exact-match"}]
    )
    return experiment, list(experiment.items.order_by("position"))


def _url(experiment: Experiment, slug: str = "alpha") -> str:
    return f"/p/{slug}/experiments/{experiment.id}/judge/"


def _shown_item(html: str) -> str:
    match = re.search(r'name="item" value="(\d+)"', html)
    assert match, "no verdict form"
    return match.group(1)


def test_roles_viewer_reads_without_buttons_editor_judges_outsider_404(team, judged):
    experiment, items = judged
    viewer = team.client(team.viewer).get(_url(experiment))
    assert viewer.status_code == 200
    html = viewer.content.decode()
    assert "topic 0" in html and "A · baseline" in html and "B · candidate" in html
    assert 'name="verdict"' not in html and "needs the editor role" in html
    refused = team.client(team.viewer).post(_url(experiment), {"item": items[0].pk, "verdict": "b"})
    assert refused.status_code == 403
    assert team.client(team.outsider).get(_url(experiment)).status_code == 404
    assert (
        team.client(team.outsider).post(_url(experiment), {"item": items[0].pk, "verdict": "b"})
    ).status_code == 404
    assert not RunRating.objects.exists()
    editor = team.client(team.editor).get(_url(experiment)).content.decode()
    assert "0 of 3 judged" in editor
    assert _shown_item(editor) == str(items[0].pk)
    for key, label in (("a", "A is better"), ("b", "B is better"), ("t", "Tie")):
        assert f'name="verdict" value="{key}"' in editor and label in editor
    assert "Skip" in editor


def test_verdicts_are_compare_ratings_and_move_on_then_the_end(team, judged):
    experiment, items = judged
    client = team.client(team.editor)
    answered = client.post(_url(experiment), {"item": items[0].pk, "verdict": "b"})
    assert answered.status_code == 303
    page = client.get(answered["Location"]).content.decode()
    assert _shown_item(page) == str(items[1].pk) and "1 of 3 judged" in page
    assert RunRating.objects.get(user=team.editor, run_id=items[0].run_id).preferred

    client.post(_url(experiment), {"item": items[1].pk, "verdict": "a"})
    assert RunRating.objects.get(user=team.editor, run_id=items[1].baseline_run_id).preferred
    answered = client.post(_url(experiment), {"item": items[2].pk, "verdict": "t"})
    ties = RunRating.objects.filter(
        user=team.editor, run_id__in=[items[2].run_id, items[2].baseline_run_id]
    )
    assert ties.count() == 2 and not any(r.preferred for r in ties)
    outcomes = list(experiment.items.order_by("position").values_list("person_outcome", flat=True))
    assert outcomes == ["win", "loss", "tie"]

    done = client.get(answered["Location"]).content.decode()
    assert "Every pair is judged" in done and "3 of 3 judged" in done
    assert 'name="verdict"' not in done
    # A pair already judged can be opened again and judged anew.
    again = client.get(_url(experiment) + f"?item={items[0].pk}").content.decode()
    assert _shown_item(again) == str(items[0].pk) and "Judged: candidate better" in again


def test_skip_shows_the_next_pair_and_filters_carry_on(team, judged):
    experiment, items = judged
    client = team.client(team.editor)
    skipped = client.get(_url(experiment) + f"?after={items[0].position}").content.decode()
    assert _shown_item(skipped) == str(items[1].pk)
    # After the last one, skipping comes round to the first still open.
    wrapped = client.get(_url(experiment) + f"?after={items[2].position}").content.decode()
    assert _shown_item(wrapped) == str(items[0].pk)
    # A filter keeps only its pairs, and a verdict goes on within it.
    filtered = _url(experiment) + "?outcome=unjudged&disagreements=1"
    page = client.get(filtered).content.decode()
    assert "of the pairs this filter keeps" in page.lower() or "filter keeps" in page
    answered = client.post(filtered, {"item": items[0].pk, "verdict": "b"})
    assert "outcome=unjudged" in answered["Location"] and "disagreements=1" in answered["Location"]


@pytest.mark.parametrize(
    "form",
    [
        {"verdict": "x"},
        {"verdict": ""},
        {"item": "junk", "verdict": "a"},
        {"item": "999999999", "verdict": "a"},
        {"verdict": "a", "item": "-1"},
    ],
)
def test_bad_verdict_or_item_is_refused_and_writes_nothing(team, judged, form):
    experiment, items = judged
    data = {"item": str(items[0].pk), **form}
    response = team.client(team.editor).post(_url(experiment), data)
    assert 400 <= response.status_code < 500
    assert not RunRating.objects.exists()
    assert not experiment.items.exclude(person_outcome="").exists()


def test_bad_urls_are_404_or_4xx_never_500(team, judged):
    experiment, _ = judged
    client = team.client(team.editor)
    assert client.get("/p/alpha/experiments/not-an-id/judge/").status_code == 404
    assert client.get(_url(experiment, "beta")).status_code == 404
    assert client.get(_url(experiment) + "?item=abc").status_code == 404
    assert client.get(_url(experiment) + "?after=abc").status_code == 422
    assert client.get(_url(experiment) + "?outcome=nonsense").status_code == 422
    assert client.get(_url(experiment) + "?after=99999999999999999999").status_code == 200
    # Another experiment's item is not this one's.
    other = run_experiment(team.alpha, team.editor, [_thread(team.alpha, "elsewhere")], "other")
    other_item = other.items.get()
    assert client.get(_url(experiment) + f"?item={other_item.pk}").status_code == 404
    assert client.post(_url(experiment), {"item": other_item.pk, "verdict": "a"}).status_code == 404
    assert not RunRating.objects.exists()


def test_an_item_not_done_has_no_buttons_and_its_verdict_is_a_conflict(team):
    thread = _thread(team.alpha, "waiting")
    request = ExperimentRequest(name="w", model="demo-brief", thread_ids=(thread.id,))
    experiment, _ = experiments.create(
        project=team.alpha, author=Author(user=team.editor), request=request
    )
    item = experiment.items.get()
    client = team.client(team.editor)
    page = client.get(_url(experiment)).content.decode()
    assert "Every pair is judged" in page and "no finished pair yet" in page
    shown = client.get(_url(experiment) + f"?item={item.pk}").content.decode()
    assert 'name="verdict"' not in shown and "no candidate answer to judge" in shown
    refused = client.post(_url(experiment), {"item": item.pk, "verdict": "b"})
    assert refused.status_code == 409
    assert not RunRating.objects.exists()


# --- two experiments ---------------------------------------------------------------------------


def _compare(a: Experiment | str, b: Experiment | str, slug: str = "alpha") -> str:
    first = a if isinstance(a, str) else a.id
    second = b if isinstance(b, str) else b.id
    return f"/p/{slug}/experiments/compare/?a={first}&b={second}"


def test_two_experiments_on_overlapping_threads_show_their_shared_rows(team):
    threads = [_thread(team.alpha, f"shared {i}") for i in range(3)]
    only_first = _thread(team.alpha, "first only")
    first = run_experiment(team.alpha, team.editor, [*threads, only_first], "brief run")
    second = run_experiment(
        team.alpha, team.editor, threads[1:], "detailed run", model="demo-detailed"
    )
    viewer = team.client(team.viewer)
    picker = viewer.get("/p/alpha/experiments/compare/")
    assert picker.status_code == 200
    assert (
        "brief run" in picker.content.decode()
        and "shared fork point" not in picker.content.decode()
    )
    page = viewer.get(_compare(first, second))
    assert page.status_code == 200
    html = page.content.decode()
    assert "2 shared fork points" in html
    assert "shared 1" in html and "shared 2" in html
    assert "first only" not in html and ">shared 0" not in html
    assert "A · brief run" in html and "B · detailed run" in html and "Baseline" in html
    assert "Candidate better" in html and "Win rate" in html and "Metrics: mean / p95" in html
    none = viewer.get(
        _compare(
            first, run_experiment(team.alpha, team.editor, [_thread(team.alpha, "apart")], "apart")
        )
    )
    assert "No shared fork points" in none.content.decode()


def test_compare_refuses_another_projects_experiment_junk_and_outsiders(team):
    mine = run_experiment(team.alpha, team.editor, [_thread(team.alpha, "mine")], "mine")
    theirs = run_experiment(team.beta, team.outsider, [_thread(team.beta, "theirs")], "theirs")
    client = team.client(team.editor)
    assert client.get(_compare(mine, theirs)).status_code == 404
    assert client.get(_compare(theirs, mine)).status_code == 404
    assert client.get(_compare(mine, "junk")).status_code == 404
    assert client.get(_compare(mine, mine) + "&page=x").status_code == 422
    assert client.get(_compare(mine, mine) + "&page=999999").status_code == 200
    assert team.client(team.outsider).get(_compare(mine, mine)).status_code == 404
    assert team.client(team.outsider).get(_compare(theirs, theirs, "beta")).status_code == 200


def test_both_pages_read_only_through_selectors(team, judged):
    experiment, items = judged
    other = run_experiment(team.alpha, team.editor, [items[0].thread], "other")
    client = team.client(team.editor)
    for url in (
        _url(experiment),
        _url(experiment) + f"?item={items[1].pk}",
        _compare(experiment, other),
        "/p/alpha/experiments/compare/",
    ):
        with recording() as recorder:
            response = client.get(url)
        assert response.status_code == 200, url
        assert not recorder.offences, "\n".join(str(o) for o in recorder.offences)
