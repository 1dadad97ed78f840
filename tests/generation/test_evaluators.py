"""The evaluators of an experiment's pairs (issue 29, item 7): each deterministic evaluator
passing and failing, the configs refused with a message naming the problem, a catastrophic
pattern cut off, the LLM judge with the demo generator (deterministic, each verdict), and an
experiment run end to end with every evaluator storing its results and scores."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

import pytest
from django.contrib.auth import get_user_model

from tests.factories import ask, make_thread, say
from tests.generation.support import drain_experiment as _drain
from transcripts.errors import InvalidInput
from transcripts.generation import experiments
from transcripts.generation.evaluators import PairEvaluation, check_evaluators, evaluate_pair
from transcripts.generation.experiments import ExperimentRequest
from transcripts.generation.generators.demo import demo_verdict
from transcripts.generation.generators.judging import parse_verdict
from transcripts.jsonvalue import JsonObject
from transcripts.ledger.default_project import default_project
from transcripts.ledger.scores import Author
from transcripts.models import (
    Membership,
    Message,
    ProjectRole,
    Score,
)

QUESTION = "How do refunds work for annual plans?"


def _message(role: str, *parts: JsonObject, key: str = "") -> JsonObject:
    return {"id": key or f"{role}-{id(parts)}", "role": role, "parts": list(parts), "metadata": {}}


def _text(text: str) -> JsonObject:
    return {"type": "text", "text": text}


def _call(name: str, args: JsonObject, call_id: str = "c1") -> JsonObject:
    return {"type": "tool-call", "toolCallId": call_id, "toolName": name, "input": args}


def _answer(*parts: JsonObject) -> list[JsonObject]:
    return [_message("assistant", *parts)]


def _run(
    configs: Sequence[Mapping[str, object]],
    baseline: list[JsonObject],
    candidate: list[JsonObject],
    question: str = QUESTION,
) -> PairEvaluation:
    return evaluate_pair(
        check_evaluators(configs),
        prompt=[_message("user", _text(question), key="q")],
        baseline=baseline,
        candidate=candidate,
        seed="seed-1",
    )


def _one(config: Mapping[str, object], baseline: str, candidate: str) -> JsonObject:
    return _run([config], _answer(_text(baseline)), _answer(_text(candidate))).results[0]


# --- deterministic evaluators ---------------------------------------------------------------


def test_exact_match_normalises_whitespace_and_optionally_case():
    same = _one({"type": "exact-match"}, "Refunds are  prorated.\n", "Refunds are prorated.")
    assert same["passed"] is True and same["candidate"] == 1.0 and same["baseline"] is None
    differ = _run([{"type": "exact-match"}], _answer(_text("A b c")), _answer(_text("A x c")))
    assert differ.results[0]["passed"] is False and differ.results[0]["candidate"] == 0.0
    assert differ.results[0]["detail"] == "the texts differ from word 2"
    assert differ.disagreement
    assert _one({"type": "exact-match"}, "Yes", "yes")["passed"] is False
    assert _one({"type": "exact-match", "ignoreCase": True}, "Yes", "yes")["passed"] is True


def test_contains_checks_each_side():
    config = {"type": "contains", "text": "prorated", "name": "mentions proration"}
    result = _one(config, "Refunds are prorated.", "No refunds.")
    assert result["name"] == "mentions proration"
    assert result["baselinePassed"] is True and result["baseline"] == 1.0
    assert result["passed"] is False and result["candidate"] == 0.0
    assert "does not contain 'prorated'" in str(result["detail"])
    both = _run([config], _answer(_text("prorated")), _answer(_text("prorated too")))
    assert both.results[0]["passed"] is True and not both.disagreement
    loose = {"type": "contains", "text": "PRORATED", "ignoreCase": True}
    assert _one(loose, "x", "Prorated.")["passed"] is True


def test_regex_checks_each_side_and_a_catastrophic_pattern_times_out_quickly():
    result = _one({"type": "regex", "pattern": r"\b\d+ days\b"}, "within 30 days", "soon")
    assert result["baselinePassed"] is True and result["passed"] is False
    hostile = {"type": "regex", "pattern": r"(a|aa)+$"}
    started, cpu = time.monotonic(), time.process_time()
    slow = _one(hostile, "a" * 60 + "!", "a" * 60 + "!")
    # The budget is CPU time (0.1 s); the wall clock allows for a machine busy with others.
    assert time.process_time() - cpu < 0.5 and time.monotonic() - started < 3.0
    assert slow["passed"] is False and slow["baselinePassed"] is False
    assert "timed out" in str(slow["detail"])


def test_json_parses_the_answer_or_its_fenced_block_and_validates_a_schema():
    plain = _one({"type": "json"}, "not json at all", '{"refund": true}')
    assert plain["passed"] is True and plain["baselinePassed"] is False
    assert "not JSON" in str(plain["detail"])
    fenced = _one({"type": "json"}, "x", 'Here it is:\n```json\n{"days": 30}\n```\nDone.')
    assert fenced["passed"] is True
    schema = {
        "type": "object",
        "properties": {"days": {"type": "integer"}},
        "required": ["days"],
    }
    checked = _one({"type": "json", "schema": schema}, '{"days": 30}', '{"days": "thirty"}')
    assert checked["baselinePassed"] is True and checked["passed"] is False
    assert "$.days" in str(checked["detail"]) and "integer" in str(checked["detail"])


def test_a_schema_pattern_keeps_to_the_budget_and_a_remote_ref_is_not_fetched():
    hostile = {"type": "json", "schema": {"type": "string", "pattern": "(a|aa)+$"}}
    started, cpu = time.monotonic(), time.process_time()
    result = _one(hostile, '"' + "a" * 60 + '!"', '"' + "a" * 60 + '!"')
    assert time.process_time() - cpu < 0.5 and time.monotonic() - started < 3.0
    assert result["passed"] is False and "timed out" in str(result["detail"])
    remote = {"type": "json", "schema": {"$ref": "http://127.0.0.1:9/schema.json"}}
    fetched = _one(remote, "{}", "{}")
    assert fetched["passed"] is False and "could not be applied" in str(fetched["detail"])


def test_length_ratio_compares_the_candidate_with_the_baseline():
    config = {"type": "length-ratio", "min": 0.5, "max": 2.0}
    within = _one(config, "x" * 100, "x" * 150)
    assert within["candidate"] == 1.5 and within["passed"] is True
    outside = _one(config, "x" * 100, "x" * 300)
    assert outside["candidate"] == 3.0 and outside["passed"] is False
    assert "outside 0.5 to 2" in str(outside["detail"])
    missing = _run([config], [], _answer(_text("x"))).results[0]
    assert missing["candidate"] is None and missing["passed"] is None
    assert missing["detail"] == "no baseline text"


def test_tool_calls_match_regardless_of_order_and_name_the_difference():
    search = _call("search_docs", {"query": "refunds", "top": 3}, "c1")
    calc = _call("calculator", {"expression": "12*3"}, "c2")
    same = _run(
        [{"type": "tool-calls"}],
        _answer(search, calc, _text("done")),
        # Another order, other call ids, keys in another order: the same calls.
        _answer(_call("calculator", {"expression": "12*3"}, "x9"),
                _call("search_docs", {"top": 3, "query": "refunds"}, "x8")),
    )  # fmt: skip
    assert same.results[0]["passed"] is True and same.results[0]["candidate"] == 1.0
    assert same.results[0]["detail"] == "same tool calls (2)"
    other = _run(
        [{"type": "tool-calls"}],
        _answer(search),
        _answer(_call("search_docs", {"query": "refund policy", "top": 3})),
    )
    result = other.results[0]
    assert result["passed"] is False and result["candidate"] == 0.0
    assert 'candidate lacks search_docs({"query": "refunds", "top": 3})' in str(result["detail"])
    assert 'candidate adds search_docs({"query": "refund policy"' in str(result["detail"])
    assert other.disagreement


def _nested(depth: int) -> JsonObject:
    schema: JsonObject = {}
    for _ in range(depth):
        schema = {"not": schema}
    return schema


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ("exact-match", "evaluators must be a list"),
        ([{"type": "astrology"}], "evaluators[0]: type must be one of"),
        (["contains"], "evaluators[0]: each evaluator must be an object"),
        ([{"type": "contains"}], "evaluators[0] (contains): text must be a non-empty string"),
        ([{"type": "contains", "text": "x", "txt": "y"}], "unknown option 'txt'"),
        ([{"type": "contains", "text": "x", "ignoreCase": "yes"}], "ignoreCase must be true"),
        ([{"type": "regex", "pattern": "(unclosed"}], "pattern is not a valid regular"),
        ([{"type": "regex", "pattern": "a" * 1001}], "pattern is too long (at most 1,000"),
        ([{"type": "json", "schema": {"type": "nonsense"}}], "schema is not a valid JSON Schema"),
        ([{"type": "json", "schema": [1]}], "schema must be a JSON Schema"),
        (
            [{"type": "json", "schema": {"description": "x" * 20_001}}],
            "schema is too large (at most 20,000 bytes)",
        ),
        (
            [{"type": "json", "schema": {"patternProperties": {"a+": {}}}}],
            "patternProperties is not supported",
        ),
        ([{"type": "json", "schema": _nested(40)}], "schema nests too deeply (at most 32"),
        ([{"type": "llm-judge", "generator": ["demo"]}], "generator must be one of demo"),
        ([{"type": "length-ratio", "min": 3, "max": 2}], "min must not be more than max"),
        ([{"type": "length-ratio", "max": "2"}], "max must be a number"),
        ([{"type": "llm-judge", "generator": "external"}], "generator must be one of demo"),
        ([{"type": "llm-judge", "model": "gpt-9"}], "unknown model 'gpt-9' for the demo"),
        ([{"type": "llm-judge", "rubric": "r" * 4001}], "rubric is too long"),
        ([{"type": "llm-judge"}, {"type": "llm-judge", "name": "j2"}], "at most one llm-judge"),
        ([{"type": "contains", "text": "a"}, {"type": "contains", "text": "b"}], "used twice"),
        ([{"type": "exact-match", "name": f"m{i}"} for i in range(11)], "at most 10 per"),
        ([{"type": "exact-match", "name": "n" * 101}], "name is too long"),
    ],
)  # fmt: skip
def test_bad_configs_are_refused_naming_the_problem(raw, problem):
    with pytest.raises(InvalidInput) as refused:
        check_evaluators(raw)
    assert refused.value.details == {"field": "evaluators"}
    assert problem in str(refused.value)


def test_an_evaluator_that_fails_leaves_the_others_results():
    broken: list[JsonObject] = [
        {"type": "regex", "name": "broken", "pattern": "(unclosed"},
        {"type": "contains", "name": "ok", "text": "x"},
    ]
    result = evaluate_pair(
        broken, prompt=[], baseline=_answer(_text("x")), candidate=_answer(_text("x")), seed="s"
    )
    assert result.results[0]["passed"] is None
    assert str(result.results[0]["detail"]).startswith("the evaluator failed:")
    assert result.results[1]["passed"] is True and not result.disagreement


def test_checked_configs_are_complete():
    checked = check_evaluators(
        [{"type": "length-ratio"}, {"type": "llm-judge", "name": "judge"}, {"type": "json"}]
    )
    assert checked[0] == {"type": "length-ratio", "name": "length-ratio", "min": 0.5, "max": 2.0}
    assert checked[1]["generator"] == "demo" and checked[1]["model"] == "demo-1"
    assert checked[1]["rubric"]
    assert checked[2] == {"type": "json", "name": "json", "schema": None}
    assert check_evaluators(None) == [] and check_evaluators([]) == []


def test_an_unavailable_judge_generator_is_refused(monkeypatch, settings):
    for name in ("TRANSCRIPTS_OPENAI_API_KEY", "OPENAI_API_KEY", "TRANSCRIPTS_OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    settings.TRANSCRIPTS_OPENAI_API_KEY = ""
    settings.TRANSCRIPTS_OPENAI_BASE_URL = ""
    with pytest.raises(InvalidInput, match="the openai generator can't run on this server"):
        check_evaluators([{"type": "llm-judge", "generator": "openai"}])
    # A judge whose generator fails while judging gives a detail, not an exception.
    config: JsonObject = {"type": "llm-judge", "name": "j", "generator": "openai", "model": "m"}
    result = evaluate_pair(
        [config],
        prompt=[_message("user", _text(QUESTION))],
        baseline=_answer(_text("a")),
        candidate=_answer(_text("b")),
        seed="s",
    )
    assert result.verdict == "" and result.results[0]["candidate"] is None
    assert str(result.results[0]["detail"]).startswith("the judge failed:")


# --- the LLM judge ------------------------------------------------------------------------------

FULL = "Refunds for annual plans work pro rata: you get the unused months back."
PARTIAL = "Refunds for annual plans are possible."
BRIEF = "Annual plans: refunds work pro rata."


@pytest.mark.parametrize(
    ("baseline", "candidate", "verdict", "value", "letter"),
    [
        (FULL, PARTIAL, "loss", 0.0, "A"),  # A covers all four key words, B three
        (FULL, BRIEF, "win", 1.0, "B"),  # both cover all four; B is shorter
        (FULL, " ".join(FULL.split()[::-1]), "tie", 0.5, "TIE"),  # as many words, as long
    ],
)
def test_the_demo_judge_decides_deterministically(baseline, candidate, verdict, value, letter):
    config = [{"type": "llm-judge", "name": "judge", "rubric": "Prefer complete answers."}]
    first = _run(config, _answer(_text(baseline)), _answer(_text(candidate)))
    again = _run(config, _answer(_text(baseline)), _answer(_text(candidate)))
    assert first == again
    assert first.verdict == verdict
    result = first.results[0]
    assert result["candidate"] == value and result["baseline"] is None
    assert result["passed"] is (verdict != "loss")
    assert str(result["detail"]).startswith(f"VERDICT {letter}: ")
    assert first.disagreement is (verdict != "tie")
    assert demo_verdict(QUESTION, baseline, candidate)[0] == letter


def test_verdict_lines_are_parsed_and_their_absence_is_no_verdict():
    assert parse_verdict("B is better.\nVERDICT: b") == "B"
    assert parse_verdict("**VERDICT:** TIE") == "TIE"
    assert parse_verdict("VERDICT: A\nOn reflection:\nVERDICT: B") == "B"
    assert parse_verdict("I prefer A.") == ""
    assert parse_verdict("THE VERDICT: ABSOLUTELY") == ""


# --- end to end ---------------------------------------------------------------------------------

ALL = [
    {"type": "exact-match"},
    {"type": "contains", "text": "refund", "ignoreCase": True},
    {"type": "regex", "pattern": r"\bplans?\b"},
    {"type": "json"},
    {"type": "length-ratio", "min": 0.1, "max": 10},
    {"type": "tool-calls"},
    {"type": "llm-judge", "rubric": "Prefer the answer that covers the question."},
]
SIDE = {"contains", "regex", "json"}


def _texts(messages: list[Message]) -> str:
    parts = [p for m in messages if m.role == "assistant" for p in m.parts]
    return "\n\n".join(str(p["text"]) for p in parts if p["type"] == "text").strip()


@pytest.mark.django_db(transaction=True)
def test_an_experiment_stores_every_evaluator_result_and_score():
    editor = get_user_model().objects.create_user("ed", password="pw-123456789")
    Membership.objects.create(user=editor, project=default_project(), role=ProjectRole.EDITOR)
    threads = []
    for answer in ("Refunds for annual plans are prorated.", "Ask support."):
        thread = make_thread("refunds")
        ask(thread, QUESTION)
        say(thread, answer)
        threads.append(thread)
    experiment, _ = experiments.create(
        project=default_project(),
        author=Author(user=editor),
        request=ExperimentRequest(
            name="all evaluators",
            model="demo-brief",
            parameters={"delayMs": 0},
            thread_ids=tuple(t.id for t in threads),
            evaluators=ALL,
        ),
    )
    _drain(experiment)
    for item in experiment.items.order_by("position"):
        assert item.status == "done"
        baseline = list(Message.objects.filter(pk__in=item.baseline_ids))
        candidate = list(Message.objects.filter(run_id=item.run_id).order_by("position"))
        results = {r["type"]: r for r in item.evaluations}
        assert list(results) == [c["type"] for c in ALL]
        letter, _ = demo_verdict(QUESTION, _texts(baseline), _texts(candidate))
        expected = {"A": "loss", "B": "win", "TIE": "tie"}[letter]
        assert item.judge_outcome == expected and item.outcome == expected
        assert results["llm-judge"]["candidate"] == {"loss": 0.0, "win": 1.0, "tie": 0.5}[expected]
        assert results["contains"]["baselinePassed"] is ("refund" in _texts(baseline).lower())
        assert results["json"]["passed"] is False
        calls = [p for m in candidate for p in m.parts if p["type"] == "tool-call"]
        assert results["tool-calls"]["passed"] is (not calls)
        ratio = len(_texts(candidate)) / len(_texts(baseline))
        assert results["length-ratio"]["candidate"] == round(ratio, 4)
        assert item.disagreement is (
            expected != "tie"
            or any(r["passed"] != r["baselinePassed"] for t, r in results.items() if t in SIDE)
            or any(results[t]["passed"] is False for t in ("exact-match", "tool-calls"))
        )
        last = [m for m in candidate if m.role == "assistant"][-1]
        scores = Score.objects.filter(source="evaluator", thread_id=item.thread_id)
        assert {s.name: s.value for s in scores.filter(message_id=last.id)} == {
            str(r["name"]): r["candidate"] for r in item.evaluations
        }
        assert set(scores.filter(message_id=baseline[-1].id).values_list("name", flat=True)) == SIDE
