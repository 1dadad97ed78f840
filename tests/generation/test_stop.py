"""Stop keeps what streamed: ledger.stop_run, Continue and Generate answer, and the demo
generator's answers (no worker: the generator runs in the test's process)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.factories import ask, conversation, make_run
from tests.web.conftest import message_at
from transcripts import ledger, selectors
from transcripts.errors import InvalidInput, RunClosed
from transcripts.generation import start
from transcripts.generation.generators import GenerationRequest, get_generator
from transcripts.generation.generators.demo import MODELS, continuation, demo_answer, key_words
from transcripts.generation.runner import generate
from transcripts.models import Message, Run, RunOrigin, RunStatus, Thread

pytestmark = pytest.mark.django_db


def _streaming(thread: Thread, *words: str, fork_from: Any, **kwargs: Any) -> Run:
    """An open browser run that streamed words (none: still queued)."""
    deltas = [("text-delta", {"delta": w + " "}) for w in words]
    options = {"generator": "demo", "origin": RunOrigin.WEB, **kwargs}
    return make_run(thread, *deltas, fork_from=fork_from, commit=False, **options)


def _text(message: Message) -> str:
    return "".join(p["text"] for p in message.parts if p["type"] == "text")


# --- ledger.stop_run ---------------------------------------------------------------------


def test_stop_commits_the_partial_answer_as_the_active_branch_marked_stopped() -> None:
    thread = conversation(1)
    question, old_answer = message_at(thread, 0), message_at(thread, 1)
    run = _streaming(thread, "half", "an", fork_from=question.id)

    stopped = ledger.stop_run(run=run)

    assert stopped.status == RunStatus.COMMITTED and stopped.metadata == {"stopped": True}
    kept = stopped.messages.get()
    assert _text(kept) == "half an " and kept.metadata["finishReason"] == "stopped"
    assert kept.active and kept.parent_id == question.id
    thread.refresh_from_db()
    assert thread.head_id == kept.id
    old_answer.refresh_from_db()
    assert not old_answer.active
    assert Run.objects.get(pk=old_answer.run_id).status == RunStatus.SUPERSEDED
    # The mark is an event of the run, so a replay (exports, the API) says it too.
    last = stopped.events.order_by("-seq").first()
    assert last is not None and last.kind == "step-finished"
    assert last.data == {"finishReason": "stopped"}
    assert selectors.project_run(stopped).messages[-1]["metadata"]["finishReason"] == "stopped"


def test_the_answer_before_the_stop_can_be_restored_and_the_stopped_one_again() -> None:
    thread = conversation(1)
    question, old_answer = message_at(thread, 0), message_at(thread, 1)
    stopped = ledger.stop_run(run=_streaming(thread, "partial", fork_from=question.id))

    ledger.restore_run(run=old_answer.run_id)
    old_answer.refresh_from_db()
    assert old_answer.active
    assert Run.objects.get(pk=stopped.id).status == RunStatus.SUPERSEDED

    ledger.restore_run(run=stopped.id)
    kept = Message.objects.get(run=stopped)
    assert kept.active and kept.metadata["finishReason"] == "stopped"


def test_stop_before_anything_streamed_only_cancels() -> None:
    thread = conversation(1)
    question = message_at(thread, 0)
    before = Message.objects.count()
    run = ledger.stop_run(run=_streaming(thread, fork_from=question.id))
    assert run.status == RunStatus.CANCELLED and run.metadata == {}
    assert Message.objects.count() == before
    assert message_at(thread, 1).active  # the old answer stays where it was


def test_a_stopped_edit_keeps_the_edited_message_to_be_answered() -> None:
    thread = conversation(1)
    question = message_at(thread, 0)
    run = start.start_edit(message=question, text="A better question?")
    stopped = ledger.stop_run(run=run)
    assert stopped.status == RunStatus.COMMITTED
    edited = stopped.messages.get()
    assert edited.role == "user" and edited.active and _text(edited) == "A better question?"
    assert "finishReason" not in edited.metadata  # no answer was stopped
    thread.refresh_from_db()
    assert thread.head_id == edited.id


def test_stop_cancels_an_agents_run_and_any_run_of_a_locked_or_hidden_thread() -> None:
    thread = conversation(1)
    question = message_at(thread, 0)
    agent = _streaming(thread, "agent", fork_from=question.id, origin=RunOrigin.API)
    assert ledger.stop_run(run=agent).status == RunStatus.CANCELLED
    for closing in ({"locked": True}, {"hidden": True}):
        closed = conversation(1)
        run = _streaming(closed, "words", fork_from=message_at(closed, 0).id)
        Thread.objects.filter(pk=closed.pk).update(**closing)
        assert ledger.stop_run(run=run).status == RunStatus.CANCELLED
    assert not Message.objects.filter(run__in=[agent]).exists()


def test_a_finished_answer_is_committed_without_the_stopped_mark() -> None:
    thread = conversation(1)
    question = message_at(thread, 0)
    run = make_run(
        thread,
        ("text-delta", {"delta": "All done."}),
        ("step-finished", {"finishReason": "stop"}),
        fork_from=question.id,
        commit=False,
        generator="demo",
        origin=RunOrigin.WEB,
    )
    stopped = ledger.stop_run(run=run)
    assert stopped.status == RunStatus.COMMITTED and stopped.metadata == {}
    assert stopped.messages.get().metadata["finishReason"] == "stop"


def test_stop_is_idempotent_and_refuses_a_closed_run() -> None:
    thread = conversation(1)
    question = message_at(thread, 0)
    run = _streaming(thread, "once", fork_from=question.id)
    first = ledger.stop_run(run=run)
    again = ledger.stop_run(run=run)
    assert (again.status, again.last_seq) == (first.status, first.last_seq)
    assert Message.objects.filter(run=run).count() == 1
    cancelled = ledger.stop_run(run=_streaming(thread, fork_from=question.id))
    assert ledger.stop_run(run=cancelled).status == RunStatus.CANCELLED
    failed = _streaming(thread, "x", fork_from=question.id)
    ledger.fail_run(run=failed, error="boom")
    with pytest.raises(RunClosed):
        ledger.stop_run(run=failed)


# --- Continue and Generate answer --------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_continue_finishes_the_same_demo_answer_in_a_new_branch() -> None:
    thread = conversation(0)
    ask(thread, "How should I index PostgreSQL for full-text search?")
    question = Message.objects.get(thread=thread, role="user")
    run = start.start_generation(thread=thread, fork_from=question.id, parameters={"delayMs": 0})
    whole = demo_answer(_text(question), model="demo-1", seed=run.id)
    words = whole.split(" ")
    # As if the worker had streamed the first six words when the reader pressed Stop.
    partial = " ".join(words[:6]) + " "
    ledger.append_events(
        run=run, events=[{"seq": 1, "kind": "text-delta", "data": {"delta": partial}}]
    )
    stopped = ledger.stop_run(run=run)
    kept = stopped.messages.get()

    again = start.start_continue(message=kept, generator="demo", parameters={"delayMs": 0})
    assert again.fork_from_id == question.id and again.metadata == {"continues": kept.id}
    assert again.parameters["seed"] == stopped.id
    assert generate(again.id, worker="test") == RunStatus.COMMITTED
    answer = Message.objects.get(run=again)
    assert _text(answer) == whole
    assert answer.active and not Message.objects.get(pk=kept.id).active
    assert Message.objects.filter(parent=question).count() == 2


def test_only_a_stopped_answer_can_be_continued() -> None:
    thread = conversation(1)
    with pytest.raises(InvalidInput):
        start.start_continue(message=message_at(thread, 1))
    with pytest.raises(InvalidInput):
        start.start_continue(message=message_at(thread, 0))


@pytest.mark.django_db(transaction=True)
def test_generate_answer_forks_from_the_user_message_and_only_from_one() -> None:
    thread = conversation(0)
    ask(thread, "Is anyone there?")
    question = Message.objects.get(thread=thread, role="user")
    run = start.start_answer(message=question, parameters={"delayMs": 0})
    assert run.fork_from_id == question.id
    assert generate(run.id, worker="test") == RunStatus.COMMITTED
    answer = Message.objects.filter(run=run, role="assistant").order_by("-position").first()
    assert answer is not None and answer.active
    with pytest.raises(InvalidInput):
        start.start_answer(message=answer)


# --- the demo generator ------------------------------------------------------------------


def _stream(prompt: str, run_id: str, **parameters: Any) -> str:
    request = GenerationRequest(
        run_id=run_id,
        messages=[{"role": "user", "parts": [{"type": "text", "text": prompt}]}],
        model=parameters.pop("model", "demo-1"),
        parameters={"delayMs": 0, **parameters},
    )
    events = list(get_generator("demo").stream(request))
    return "".join(d["delta"] for kind, d in events if kind == "text-delta")


def test_the_demo_answers_the_prompt_from_its_key_words() -> None:
    prompt = "Why does my Django app leak memory under uvicorn?"
    assert key_words(prompt) == ["Django", "app", "leak", "memory"]
    assert key_words("Will it rain in Paris?") == ["rain", "Paris"]
    text = _stream(prompt, "run-a")
    assert text == demo_answer(prompt, seed="run-a")
    assert "Django, app, leak and memory" in text


def test_two_regenerations_and_two_models_differ_and_each_is_predictable() -> None:
    prompt = "How do I keep a branching transcript store fast?"
    first, second = _stream(prompt, "run-1"), _stream(prompt, "run-2")
    assert first != second
    assert _stream(prompt, "run-1") == first
    brief = _stream(prompt, "run-1", model="demo-brief")
    detailed = _stream(prompt, "run-1", model="demo-detailed")
    assert len(brief.split(". ")) < len(detailed.split(". "))
    assert set(MODELS) == set(get_generator("demo").models())


def test_the_demo_continues_any_text_it_did_not_write() -> None:
    rest = continuation(
        "Someone else began", prompt="Tell me about tides", model="demo-1", seed="s"
    )
    assert rest.startswith(" ") and "tides" in rest


def test_the_openai_generator_offers_its_configured_models(settings: Any) -> None:
    generator = get_generator("openai")
    settings.TRANSCRIPTS_OPENAI_MODEL = "gpt-4o-mini"
    settings.TRANSCRIPTS_OPENAI_MODELS = ""
    assert generator.models() == ["gpt-4o-mini"]
    settings.TRANSCRIPTS_OPENAI_MODELS = " gpt-4.1, llama3 ,gpt-4.1,"
    assert generator.models() == ["gpt-4.1", "llama3"]


def test_the_openai_generator_asks_to_carry_on_a_stopped_answer() -> None:
    from transcripts.generation.generators.openai_chat import CONTINUE_PROMPT, OpenAIChatGenerator

    def message(id_: str, role: str, text: str, parent: str | None) -> dict[str, Any]:
        parts = [{"type": "text", "text": text}]
        return {"id": id_, "role": role, "parts": parts, "metadata": {}, "parentId": parent}

    history = [
        message("u", "user", "Count to five", None),
        message("a", "assistant", "One, two,", "u"),
    ]
    request = GenerationRequest(run_id="r", messages=history, parameters={"continues": "m"})
    messages = OpenAIChatGenerator().build_messages(request)
    assert messages[-2] == {"role": "assistant", "content": "One, two,"}
    assert messages[-1] == {"role": "user", "content": CONTINUE_PROMPT}
    assert request.partial_answer == "One, two,"
    plain = GenerationRequest(run_id="r", messages=history[:1])
    assert OpenAIChatGenerator().build_messages(plain)[-1]["role"] == "user"
    assert plain.partial_answer == ""


def test_a_redacted_stopped_answer_still_says_it_was_stopped(team: Any) -> None:
    from transcripts.ledger import moderation

    thread = conversation(1)
    question = message_at(thread, 0)
    stopped = ledger.stop_run(run=_streaming(thread, "secret", "words", fork_from=question.id))
    kept = stopped.messages.get()
    moderation.redact_message(user=team.superuser, message=kept, reason="test")
    kept.refresh_from_db()
    # "stopped" is structure (a finish reason), so redaction keeps it, with the tag and Continue.
    assert kept.metadata["finishReason"] == "stopped"
    assert "secret" not in _text(kept)
    assert selectors.project_run(stopped).messages[-1]["metadata"]["finishReason"] == "stopped"
