"""Experiments end to end (issue 29): made from ids, a tag or a filter, run by real worker
processes (and by the task run in-process), each candidate a branch beside the active path
until adopted; pause, resume, cancel, the idempotency key, and the refusals."""

from __future__ import annotations

import os
import signal

import pytest
from django.contrib.auth import get_user_model

from tests.factories import ask, conversation, make_thread, say
from tests.generation.support import drain_experiment as _drain
from tests.generation.support import wait_for
from transcripts import ledger
from transcripts.errors import Conflict, InvalidInput, PermissionDenied
from transcripts.generation import experiments
from transcripts.generation.experiments import ExperimentRequest
from transcripts.ledger import experiments as experiment_ledger
from transcripts.ledger.default_project import default_project
from transcripts.ledger.organise import tag_thread
from transcripts.ledger.scores import Author
from transcripts.models import (
    Experiment,
    ExperimentStatus,
    ItemStatus,
    Membership,
    Message,
    ProjectRole,
    Run,
    RunRating,
    RunStatus,
    Score,
    Thread,
)
from transcripts.selectors.experiments import progress

pytestmark = pytest.mark.django_db(transaction=True)
FAST = {"delayMs": 0}


@pytest.fixture
def editor():
    user = get_user_model().objects.create_user("ed", password="pw-123456789")
    Membership.objects.create(user=user, project=default_project(), role=ProjectRole.EDITOR)
    return user


def _active_ids(thread: Thread) -> list[str]:
    return list(
        Message.objects.filter(thread=thread, active=True)
        .order_by("depth")
        .values_list("id", flat=True)
    )


def _request(**kwargs: object) -> ExperimentRequest:
    base: dict[str, object] = {"name": "brief answers", "model": "demo-brief", "parameters": FAST}
    return ExperimentRequest(**{**base, **kwargs})  # type: ignore[arg-type]


def test_candidates_are_branches_beside_the_active_path_until_adopted(editor):
    threads = [conversation(turns=2, title=f"support {i}") for i in range(3)]
    before = {t.id: _active_ids(t) for t in threads}
    heads = {t.id: t.head_id for t in threads}
    experiment, created = experiments.create(
        project=default_project(),
        author=Author(user=editor),
        request=_request(
            thread_ids=tuple(t.id for t in threads), evaluators=[{"type": "exact-match"}]
        ),
    )
    assert created and experiment.item_count == 3
    _drain(experiment)
    experiment.refresh_from_db()
    assert experiment.status == ExperimentStatus.COMPLETED
    assert progress(experiment).counts == {ItemStatus.DONE: 3}
    for thread in threads:
        thread.refresh_from_db()
        assert _active_ids(thread) == before[thread.id]
        assert thread.head_id == heads[thread.id]
    items = list(experiment.items.order_by("position"))
    for item, thread in zip(items, threads, strict=True):
        last_user = Message.objects.filter(thread=thread, active=True, role="user").order_by(
            "-depth"
        )[0]
        assert item.fork_from_id == last_user.id
        run = Run.objects.get(pk=item.run_id)
        assert run.status == RunStatus.SUPERSEDED
        assert run.fork_from_id == last_user.id
        assert run.metadata["experiment"] == experiment.id
        assert run.model == "demo-brief"
        candidate = list(Message.objects.filter(run=run))
        assert candidate and not any(m.active for m in candidate)
        assert item.baseline_ids == before[thread.id][-1:]
        assert item.candidate_metrics["length"] > 0
        assert item.evaluations[0]["type"] == "exact-match"
        assert Score.objects.filter(thread=thread, source="evaluator").exists()

    adopted = experiment_ledger.adopt(
        experiment=experiment, author=Author(user=editor), item_ids=[items[0].pk]
    )
    assert adopted.adopted == [items[0].pk]
    threads[0].refresh_from_db()
    assert Message.objects.get(pk=threads[0].head_id).run_id == items[0].run_id
    assert _active_ids(threads[1]) == before[threads[1].id]
    # The usual Restore of the baseline undoes it.
    ledger.restore_run(run=items[0].baseline_run_id)
    assert _active_ids(threads[0]) == before[threads[0].id]


def test_each_user_turn_is_its_own_item_and_a_thread_changed_later_keeps_its_fork(editor):
    thread = conversation(turns=3)
    users = list(
        Message.objects.filter(thread=thread, role="user")
        .order_by("depth")
        .values_list("id", flat=True)
    )
    experiment, _ = experiments.create(
        project=default_project(),
        author=Author(user=editor),
        request=_request(thread_ids=(thread.id,), fork_rule="each-user"),
    )
    assert [i.fork_from_id for i in experiment.items.order_by("position")] == users
    # New turns after the experiment was made: the candidates still fork where chosen.
    ask(thread, "one more question")
    say(thread, "one more answer")
    _drain(experiment)
    runs = Run.objects.filter(metadata__experiment=experiment.id)
    assert sorted(r.fork_from_id for r in runs) == sorted(users)
    assert all(r.status == RunStatus.SUPERSEDED for r in runs)


def test_threads_come_from_a_tag_and_a_filter(editor):
    project = default_project()
    tagged = [conversation(turns=1, title=f"refund {i}") for i in range(2)]
    other = conversation(turns=1, title="shipping")
    for thread in tagged:
        tag_thread(thread=thread, user=editor, tag="refunds")
    by_tag, _ = experiments.create(
        project=project, author=Author(user=editor), request=_request(tag="refunds")
    )
    assert {i.thread_id for i in by_tag.items.all()} == {t.id for t in tagged}
    by_filter, _ = experiments.create(
        project=project, author=Author(user=editor), request=_request(filter="?q=shipping")
    )
    assert [i.thread_id for i in by_filter.items.all()] == [other.id]


def test_message_rule_forks_where_told_and_refuses_a_message_of_another_thread(editor):
    thread = conversation(turns=2)
    first_answer = Message.objects.filter(thread=thread, role="assistant").order_by("depth")[0]
    experiment, _ = experiments.create(
        project=default_project(),
        author=Author(user=editor),
        request=_request(fork_rule="message", forks={thread.id: first_answer.id}),
    )
    item = experiment.items.get()
    assert item.fork_from_id == first_answer.parent_id
    assert item.baseline_ids == [first_answer.id]
    elsewhere = conversation(turns=1)
    stranger = Message.objects.filter(thread=elsewhere).first()
    count = Experiment.objects.count()
    with pytest.raises(InvalidInput, match="not in thread"):
        experiments.create(
            project=default_project(),
            author=Author(user=editor),
            request=_request(fork_rule="message", forks={thread.id: stranger.id}),
        )
    assert Experiment.objects.count() == count


def test_bad_requests_are_refused_and_queue_nothing(editor):
    thread = conversation(turns=1)
    author = Author(user=editor)
    project = default_project()
    cases = [
        (_request(thread_ids=(thread.id,), model="gpt-9"), "unknown model"),
        (_request(thread_ids=(thread.id,), generator="nope"), "unknown generator"),
        (_request(filter="?q=nothing-matches-this"), "empty"),
        (_request(thread_ids=(thread.id,), fork_rule="sideways"), "forkRule"),
        (_request(thread_ids=(thread.id,), evaluators=[{"type": "astrology"}]), "evaluators"),
        (_request(thread_ids=("01" + "A" * 24,)), "no thread"),
        (_request(thread_ids=tuple(f"{i:026d}" for i in range(10_001))), "10,000"),
        (_request(thread_ids=(thread.id,), concurrency=0), "concurrency"),
        (_request(thread_ids=(thread.id,), name=" "), "name"),
    ]
    for request, said in cases:
        with pytest.raises(InvalidInput, match=said):
            experiments.create(project=project, author=author, request=request)
    assert not Experiment.objects.exists()
    assert not Run.objects.filter(status=RunStatus.QUEUED).exists()


def test_an_empty_thread_gives_no_item_and_a_viewer_may_not_create(editor):
    empty = make_thread("nothing yet")
    with pytest.raises(InvalidInput, match="none has a user message"):
        experiments.create(
            project=default_project(),
            author=Author(user=editor),
            request=_request(thread_ids=(empty.id,)),
        )
    viewer = get_user_model().objects.create_user("vi", password="pw-123456789")
    Membership.objects.create(user=viewer, project=default_project(), role=ProjectRole.VIEWER)
    thread = conversation(turns=1)
    with pytest.raises(PermissionDenied):
        experiments.create(
            project=default_project(),
            author=Author(user=viewer),
            request=_request(thread_ids=(thread.id,)),
        )


def test_the_idempotency_key_makes_one_experiment(editor):
    thread = conversation(turns=1)
    request = _request(thread_ids=(thread.id,), idempotency_key="nightly-1")
    first, created = experiments.create(
        project=default_project(), author=Author(user=editor), request=request
    )
    again, created_again = experiments.create(
        project=default_project(), author=Author(user=editor), request=request
    )
    assert created and not created_again and again.pk == first.pk
    assert Experiment.objects.count() == 1
    assert Run.objects.filter(metadata__experiment=first.id).count() == 1


def test_concurrency_pause_resume_and_cancel(editor):
    threads = [conversation(turns=1, title=f"t{i}") for i in range(6)]
    author = Author(user=editor)
    experiment, _ = experiments.create(
        project=default_project(),
        author=author,
        request=_request(thread_ids=tuple(t.id for t in threads), concurrency=2),
    )
    assert progress(experiment).counts == {ItemStatus.QUEUED: 2, ItemStatus.PENDING: 4}
    experiment_ledger.pause_experiment(experiment=experiment, author=author)
    first = experiment.items.filter(status=ItemStatus.QUEUED).first()
    experiments.generate_candidate.call(first.run_id)
    # Paused: the finished item starts no other.
    assert progress(experiment).counts == {
        ItemStatus.DONE: 1,
        ItemStatus.QUEUED: 1,
        ItemStatus.PENDING: 4,
    }
    experiments.resume(experiment=experiment, author=author)
    assert progress(experiment).counts[ItemStatus.QUEUED] == 2
    experiment_ledger.cancel_experiment(experiment=experiment, author=author)
    counts = progress(experiment).counts
    assert counts == {ItemStatus.DONE: 1, ItemStatus.CANCELLED: 5}
    assert not Run.objects.filter(
        metadata__experiment=experiment.id, status__in=["queued", "streaming"]
    ).exists()
    with pytest.raises(Conflict):
        experiment_ledger.pause_experiment(experiment=experiment, author=author)


def test_a_person_judges_a_pair_as_compare_rates_it(editor):
    thread = conversation(turns=1)
    experiment, _ = experiments.create(
        project=default_project(),
        author=Author(user=editor),
        request=_request(thread_ids=(thread.id,)),
    )
    _drain(experiment)
    item = experiment.items.get()
    item = experiment_ledger.judge_item(item=item, user=editor, verdict="b")
    assert item.outcome == "win"
    assert RunRating.objects.get(user=editor, run_id=item.run_id).preferred
    item = experiment_ledger.judge_item(item=item, user=editor, verdict="a")
    assert item.outcome == "loss"
    assert RunRating.objects.get(user=editor, run_id=item.baseline_run_id).preferred
    assert not RunRating.objects.get(user=editor, run_id=item.run_id).preferred
    winners = experiment_ledger.adopt(
        experiment=experiment, author=Author(user=editor), winners=True
    )
    assert winners.adopted == []
    with pytest.raises(InvalidInput):
        experiment_ledger.judge_item(item=item, user=editor, verdict="x")


def test_discarding_with_delete_removes_the_candidates_not_adopted(editor):
    threads = [conversation(turns=1, title=f"t{i}") for i in range(2)]
    experiment, _ = experiments.create(
        project=default_project(),
        author=Author(user=editor),
        request=_request(thread_ids=tuple(t.id for t in threads)),
    )
    _drain(experiment)
    items = list(experiment.items.order_by("position"))
    experiment_ledger.adopt(
        experiment=experiment, author=Author(user=editor), item_ids=[items[0].pk]
    )
    admin = get_user_model().objects.create_user("ad", password="pw-123456789")
    Membership.objects.create(user=admin, project=default_project(), role=ProjectRole.ADMIN)
    with pytest.raises(PermissionDenied):
        experiment_ledger.discard(experiment=experiment, author=Author(user=editor), delete=True)
    deleted = experiment_ledger.discard(
        experiment=experiment, author=Author(user=admin), delete=True
    )
    assert deleted == 1
    assert Run.objects.filter(pk=items[0].run_id).exists()
    assert not Run.objects.filter(pk=items[1].run_id).exists()
    assert not Message.objects.filter(run_id=items[1].run_id).exists()
    assert _active_ids(threads[1])


def test_workers_run_it_and_a_killed_worker_leaves_no_item_twice(editor, start_worker):
    threads = [conversation(turns=1, title=f"t{i}") for i in range(12)]
    experiment, _ = experiments.create(
        project=default_project(),
        author=Author(user=editor),
        request=_request(
            thread_ids=tuple(t.id for t in threads), parameters={"delayMs": 20}, concurrency=3
        ),
    )
    env = {"TRANSCRIPTS_LEASE_SECONDS": "2"}
    doomed = start_worker(**env)
    wait_for(
        lambda: Run.objects.filter(metadata__experiment=experiment.id, status="streaming").exists(),
        what="a candidate to stream",
    )
    os.killpg(doomed.pid, signal.SIGKILL)
    doomed.wait()
    start_worker(**env)
    start_worker(**env)
    wait_for(
        lambda: Experiment.objects.get(pk=experiment.pk).status == ExperimentStatus.COMPLETED,
        timeout=90,
        what="the experiment to complete",
    )
    assert progress(experiment).counts == {ItemStatus.DONE: 12}
    committed = Run.objects.filter(metadata__experiment=experiment.id, status=RunStatus.SUPERSEDED)
    # One candidate per item: a run cut off was failed and the item tried again.
    assert sorted(committed.values_list("metadata__experimentItem", flat=True)) == sorted(
        experiment.items.values_list("pk", flat=True)
    )
    for thread in threads:
        assert Message.objects.get(pk=Thread.objects.get(pk=thread.pk).head_id).run.metadata == {}


def test_results_are_filtered_sorted_paged_summarised_and_compared(editor):
    from transcripts.selectors.experiment_results import (
        compared_page,
        parse_result_filter,
        result_page,
        summary,
    )

    threads = [conversation(turns=1, title=f"t{i}") for i in range(5)]
    ids = tuple(t.id for t in threads)
    author = Author(user=editor)
    first, _ = experiments.create(
        project=default_project(),
        author=author,
        request=_request(thread_ids=ids, evaluators=[{"type": "exact-match"}]),
    )
    second, _ = experiments.create(
        project=default_project(),
        author=author,
        request=_request(thread_ids=ids[:3], model="demo-detailed"),
    )
    _drain(first)
    _drain(second)
    item = first.items.order_by("position").first()
    experiment_ledger.judge_item(item=item, user=editor, verdict="b")

    page = result_page(first, parse_result_filter({"sort": "-candidate-length"}), size=2)
    assert page.total == 5 and page.pages == 3 and len(page.rows) == 2
    lengths = [r.metric("candidate", "length") or 0.0 for r in page.rows]
    assert lengths == sorted(lengths, reverse=True)
    assert page.rows[0].candidate and page.rows[0].baseline
    won = result_page(first, parse_result_filter({"outcome": "win"}))
    assert [r.item.pk for r in won.rows] == [item.pk]
    with pytest.raises(InvalidInput):
        parse_result_filter({"sort": "nonsense"})

    said = summary(first)
    assert (said.wins, said.losses, said.ties, said.unjudged) == (1, 0, 0, 4)
    assert said.metrics["candidate"]["length"].count == 5
    assert said.evaluators[0].name == "exact-match"
    assert said.evaluators[0].candidate.total == 5
    low, high = said.win_rate.interval
    assert 0 < low < 1 <= high + 1e-9

    paired, shared = compared_page(first, second)
    assert shared == 3 and len(paired) == 3
    assert all(p.second is not None and p.second.candidate for p in paired)


# --- a database restart mid-experiment (the faults' own PostgreSQL, stopped and started) ---------

from tests.faults.conftest import processes, stack  # noqa: E402, F401  (fixtures)
from tests.faults.stack import Stack  # noqa: E402
from tests.faults.stack import wait_for as wait_on_stack  # noqa: E402

# Run on the faults' database: twelve one-turn threads and an experiment on them (the
# editor's), its id printed.
_MAKE_EXPERIMENT = """
import django
django.setup()
from django.contrib.auth import get_user_model
from transcripts import ledger
from transcripts.generation import experiments
from transcripts.generation.experiments import ExperimentRequest
from transcripts.ledger.scores import Author
from transcripts.models import Project

project = Project.objects.get(slug="faults")
ids = []
for n in range(12):
    thread, _ = ledger.create_thread(project=project, title=f"restart {n}")
    for kind, data in (
        ("message", {"role": "user", "parts": [{"type": "text", "text": f"question {n}"}]}),
        ("text-delta", {"delta": f"answer {n}"}),
    ):
        run, _ = ledger.begin_run(thread=thread)
        ledger.append_events(run=run, events=[{"seq": 1, "kind": kind, "data": data}])
        ledger.commit_run(run=run)
    ids.append(thread.id)
experiment, _ = experiments.create(
    project=project,
    author=Author(user=get_user_model().objects.get(username="editor")),
    request=ExperimentRequest(
        name="restart", model="demo-brief", parameters={"delayMs": 40},
        thread_ids=tuple(ids), concurrency=3,
    ),
)
print(experiment.id)
"""


def test_a_database_restart_mid_experiment_leaves_every_item_done_once(
    processes: Stack,  # noqa: F811  (the faults fixture)
):
    made = processes.start("-c", _MAKE_EXPERIMENT, output=True, keep=True)
    out, _ = made.communicate(timeout=120)
    assert made.returncode == 0, out
    experiment_id = out.decode().split()[-1]
    counts = """
        SELECT i.status, count(*) FROM transcripts_experimentitem i
        JOIN transcripts_experiment e ON e.id = i.experiment_id
        WHERE e.name = 'restart' GROUP BY 1
    """
    processes.start_worker()
    processes.start_worker()
    wait_on_stack(lambda: dict(processes.query(counts)).get("done", 0) >= 2, 60, "two items done")
    processes.cluster.stop()
    processes.cluster.start()
    wait_on_stack(
        lambda: processes.query(
            "SELECT 1 FROM transcripts_experiment WHERE name = 'restart' AND status = 'completed'"
        ),
        120,
        "the experiment to complete after the restart",
    )
    assert dict(processes.query(counts)) == {"done": 12}
    # One candidate per item: a run the restart cut off was failed and its item tried again.
    candidates = processes.query(
        "SELECT metadata->>'experimentItem', count(*) FROM transcripts_run"
        " WHERE metadata->>'experiment' = %s AND status = 'superseded' GROUP BY 1",
        experiment_id,
    )
    items = processes.query(
        "SELECT i.id::text FROM transcripts_experimentitem i"
        " JOIN transcripts_experiment e ON e.id = i.experiment_id WHERE e.name = 'restart'"
    )
    assert sorted(item for item, _ in candidates) == sorted(item for (item,) in items)
    assert {n for _, n in candidates} == {1}


def test_a_run_cut_off_is_tried_again_and_a_generator_error_fails_the_item(editor):
    threads = [conversation(turns=1, title=f"t{i}") for i in range(2)]
    experiment, _ = experiments.create(
        project=default_project(),
        author=Author(user=editor),
        request=_request(thread_ids=tuple(t.id for t in threads)),
    )
    experiments.dispatch(experiment.id)
    first, second = experiment.items.order_by("position")
    cut_off, broken = first.run_id, second.run_id
    ledger.fail_run(
        run=cut_off,
        error={"message": "OperationalError: deadlock detected", "code": "generator_crashed"},
    )
    ledger.fail_run(run=broken, error={"message": "the model said no", "code": "GeneratorError"})
    experiments.finish(cut_off)
    experiments.finish(broken)
    first.refresh_from_db()
    second.refresh_from_db()
    assert first.status == ItemStatus.PENDING and first.attempts == 1
    assert second.status == ItemStatus.FAILED and second.error["message"] == "the model said no"
    _drain(experiment)
    first.refresh_from_db()
    assert first.status == ItemStatus.DONE and first.attempts == 2 and first.run_id != cut_off
    assert Run.objects.get(pk=cut_off).status == RunStatus.FAILED
    experiment.refresh_from_db()
    assert experiment.status == ExperimentStatus.COMPLETED
    assert progress(experiment).counts == {ItemStatus.DONE: 1, ItemStatus.FAILED: 1}
