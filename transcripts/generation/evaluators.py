"""Evaluators of an experiment's pairs (issue 29): deterministic checks of the baseline and
the candidate answers, and an LLM judge.

An evaluator config is a JSON object with a "type" (one of TYPES), an optional "name" (the
type by default; names are unique in one experiment) and the type's options.
`check_evaluators` checks the configs when the experiment is made (every problem a 422 naming
the evaluator and what is wrong) and gives them back complete; `evaluate_pair` runs them on a
pair. Side evaluators (contains, regex, json) check each answer on its own ("baseline",
"baselinePassed", "candidate", "passed"); pair evaluators (exact-match, length-ratio,
tool-calls, llm-judge) compare the two and give only the candidate's value. A value is 1/0
for a check, the ratio for length-ratio, 1/0.5/0 for the judge's win/tie/loss; None when it
does not apply (no baseline answer, a judge that gave no verdict).

Patterns run with the `regex` package under a budget of CPU time (PATTERN_BUDGET per evaluator
and pair), so a catastrophic pattern (in a regex evaluator or a JSON Schema's "pattern") fails
with "timed out" instead of holding a worker.
"""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import lru_cache

import regex
from jsonschema import ValidationError, validators
from jsonschema.exceptions import SchemaError, best_match
from jsonschema.protocols import Validator
from referencing import Registry

from transcripts.errors import InvalidInput
from transcripts.generation.generators import EXTERNAL, GENERATORS, get_generator
from transcripts.generation.generators import unavailable_reason as generator_unavailable
from transcripts.generation.generators.base import GenerationRequest
from transcripts.generation.generators.judging import (
    DEFAULT_RUBRIC,
    judge_messages,
    parse_verdict,
)
from transcripts.jsonvalue import JsonObject, JsonValue, objects_in

logger = logging.getLogger(__name__)

TYPES = ("exact-match", "contains", "regex", "json", "length-ratio", "tool-calls", "llm-judge")
PAIR_TYPES = frozenset({"exact-match", "length-ratio", "tool-calls", "llm-judge"})
OPTIONS: dict[str, frozenset[str]] = {
    "exact-match": frozenset({"ignoreCase"}),
    "contains": frozenset({"text", "ignoreCase"}),
    "regex": frozenset({"pattern"}),
    "json": frozenset({"schema"}),
    "length-ratio": frozenset({"min", "max"}),
    "tool-calls": frozenset(),
    "llm-judge": frozenset({"generator", "model", "rubric"}),
}
MAX_EVALUATORS = 10
MAX_NAME = 100
MAX_TEXT = 1000
MAX_PATTERN = 1000
MAX_SCHEMA = 20_000
MAX_RUBRIC = 4000
MAX_DETAIL = 240
# CPU seconds of pattern matching one evaluator may spend on a pair (both sides together);
# CPU time, as the regex package's timeout counts it (a busy machine stretches the wall time).
PATTERN_BUDGET = 0.1
# How much of the conversation and of each answer the judge reads (characters).
JUDGE_CONVERSATION = 12_000
JUDGE_ANSWER = 20_000
JUDGE_OUTCOMES = {"A": ("loss", 0.0), "B": ("win", 1.0), "TIE": ("tie", 0.5)}


@dataclass(frozen=True)
class PairEvaluation:
    """The evaluators' results on one pair: one JSON object per evaluator, the LLM judge's
    verdict ("win", "loss", "tie", or "" without one), and whether the two sides disagree."""

    results: list[JsonObject] = field(default_factory=list)
    verdict: str = ""
    disagreement: bool = False


# --- checking the configs -----------------------------------------------------------------------


def _refuse(where: str, problem: str) -> InvalidInput:
    return InvalidInput(f"{where}: {problem}", field="evaluators")


def _flag(entry: Mapping[str, object], key: str, where: str) -> bool:
    value = entry.get(key, False)
    if not isinstance(value, bool):
        raise _refuse(where, f"{key} must be true or false")
    return value


def _string(entry: Mapping[str, object], key: str, where: str, limit: int) -> str:
    value = entry.get(key)
    if not isinstance(value, str) or not value:
        raise _refuse(where, f"{key} must be a non-empty string")
    if len(value) > limit:
        raise _refuse(where, f"{key} is too long (at most {limit:,} characters)")
    return value


def _check_exact_match(entry: Mapping[str, object], where: str) -> JsonObject:
    return {"ignoreCase": _flag(entry, "ignoreCase", where)}


def _check_contains(entry: Mapping[str, object], where: str) -> JsonObject:
    return {
        "text": _string(entry, "text", where, MAX_TEXT),
        "ignoreCase": _flag(entry, "ignoreCase", where),
    }


def _check_regex(entry: Mapping[str, object], where: str) -> JsonObject:
    pattern = _string(entry, "pattern", where, MAX_PATTERN)
    try:
        regex.compile(pattern)
    except (regex.error, ValueError, OverflowError) as exc:
        raise _refuse(where, f"pattern is not a valid regular expression: {exc}") from None
    return {"pattern": pattern}


MAX_SCHEMA_DEPTH = 32


def _schema_shape(schema: object) -> tuple[int, set[str]]:
    """How deeply schema nests and every key of its objects (walked without recursion)."""
    deepest, keys = 0, set[str]()
    stack: list[tuple[object, int]] = [(schema, 1)]
    while stack:
        value, depth = stack.pop()
        deepest = max(deepest, depth)
        if isinstance(value, dict):
            keys.update(str(k) for k in value)
            stack += [(inner, depth + 1) for inner in value.values()]
        elif isinstance(value, list):
            stack += [(inner, depth + 1) for inner in value]
    return deepest, keys


def _check_json(entry: Mapping[str, object], where: str) -> JsonObject:
    schema = entry.get("schema")
    if schema is None:
        return {"schema": None}
    if not isinstance(schema, dict):
        raise _refuse(where, "schema must be a JSON Schema (an object)")
    depth, keys = _schema_shape(schema)
    if depth > MAX_SCHEMA_DEPTH:
        raise _refuse(where, f"schema nests too deeply (at most {MAX_SCHEMA_DEPTH} levels)")
    if len(json.dumps(schema)) > MAX_SCHEMA:
        raise _refuse(where, f"schema is too large (at most {MAX_SCHEMA:,} bytes)")
    if "patternProperties" in keys:
        raise _refuse(
            where, "schema: patternProperties is not supported (use propertyNames with a pattern)"
        )
    try:
        validators.validator_for(schema, default=validators.Draft202012Validator).check_schema(
            schema
        )
    except SchemaError as exc:
        raise _refuse(where, f"schema is not a valid JSON Schema: {exc.message}") from None
    return {"schema": schema}


def _number(entry: Mapping[str, object], key: str, where: str, default: float) -> float:
    value = entry.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise _refuse(where, f"{key} must be a number, 0 or more")
    return float(value)


def _check_length_ratio(entry: Mapping[str, object], where: str) -> JsonObject:
    low = _number(entry, "min", where, 0.5)
    high = _number(entry, "max", where, 2.0)
    if low > high:
        raise _refuse(where, "min must not be more than max")
    return {"min": low, "max": high}


def _check_tool_calls(entry: Mapping[str, object], where: str) -> JsonObject:
    return {}


def _check_llm_judge(entry: Mapping[str, object], where: str) -> JsonObject:
    name = entry.get("generator", "demo")
    if not isinstance(name, str) or name == EXTERNAL or name not in GENERATORS:
        raise _refuse(where, f"generator must be one of {', '.join(GENERATORS)}")
    reason = generator_unavailable(name)
    if reason:
        raise _refuse(where, f"the {name} generator can't run on this server: {reason}")
    generator = get_generator(name)
    model = entry.get("model") or generator.default_model()
    if model not in generator.models():
        raise _refuse(
            where,
            f"unknown model {model!r} for the {name} generator; expected one of "
            f"{', '.join(generator.models())}",
        )
    rubric = entry.get("rubric") or DEFAULT_RUBRIC
    if not isinstance(rubric, str):
        raise _refuse(where, "rubric must be a string")
    if len(rubric) > MAX_RUBRIC:
        raise _refuse(where, f"rubric is too long (at most {MAX_RUBRIC:,} characters)")
    return {"generator": name, "model": str(model), "rubric": rubric}


_CHECKS: dict[str, Callable[[Mapping[str, object], str], JsonObject]] = {
    "exact-match": _check_exact_match,
    "contains": _check_contains,
    "regex": _check_regex,
    "json": _check_json,
    "length-ratio": _check_length_ratio,
    "tool-calls": _check_tool_calls,
    "llm-judge": _check_llm_judge,
}


def _check_one(entry: object, where: str) -> JsonObject:
    if not isinstance(entry, dict):
        raise _refuse(where, "each evaluator must be an object with a type")
    kind = entry.get("type")
    if kind not in TYPES:
        raise _refuse(where, f"type must be one of {', '.join(TYPES)}")
    where = f"{where} ({kind})"
    unknown = sorted(set(entry) - {"type", "name"} - OPTIONS[str(kind)])
    if unknown:
        known = ", ".join(sorted(OPTIONS[str(kind)])) or "none"
        raise _refuse(where, f"unknown option {unknown[0]!r} (options: {known})")
    name = entry.get("name") or kind
    if not isinstance(name, str) or not name.strip():
        raise _refuse(where, "name must be a non-empty string")
    if len(name.strip()) > MAX_NAME:
        raise _refuse(where, f"name is too long (at most {MAX_NAME} characters)")
    return {"type": str(kind), "name": name.strip(), **_CHECKS[str(kind)](entry, where)}


def check_evaluators(raw: object) -> list[JsonObject]:
    """The evaluator configs, checked and complete (defaults filled in); InvalidInput naming
    the field "evaluators", the evaluator and the problem."""
    if raw in (None, ""):
        return []
    if not isinstance(raw, list):
        raise InvalidInput("evaluators must be a list", field="evaluators")
    if len(raw) > MAX_EVALUATORS:
        raise InvalidInput(
            f"evaluators: at most {MAX_EVALUATORS} per experiment", field="evaluators"
        )
    checked = [_check_one(entry, f"evaluators[{i}]") for i, entry in enumerate(raw)]
    names = Counter(str(c["name"]) for c in checked)
    twice = [name for name, count in names.items() if count > 1]
    if twice:
        raise InvalidInput(
            f"evaluators: the name {twice[0]!r} is used twice (give each a distinct name)",
            field="evaluators",
        )
    if sum(1 for c in checked if c["type"] == "llm-judge") > 1:
        raise InvalidInput("evaluators: at most one llm-judge per experiment", field="evaluators")
    return checked


# --- reading a side ------------------------------------------------------------------------------


def _parts(messages: Sequence[JsonObject], kind: str) -> Iterator[JsonObject]:
    for message in messages:
        if message.get("role") == "assistant":
            yield from (p for p in objects_in(message.get("parts")) if p.get("type") == kind)


def _text(messages: Sequence[JsonObject]) -> str:
    """The answer's text: its assistant messages' text parts."""
    texts = []
    for message in messages:
        if message.get("role") == "assistant":
            parts = objects_in(message.get("parts"))
            texts.append("".join(str(p.get("text", "")) for p in parts if p.get("type") == "text"))
    return "\n\n".join(t for t in texts if t).strip()


def _calls(messages: Sequence[JsonObject]) -> Counter[tuple[str, str]]:
    """The answer's tool calls: (tool name, its input as sorted JSON), counted."""
    return Counter(
        (str(p.get("toolName", "")), json.dumps(p.get("input"), sort_keys=True, default=str))
        for p in _parts(messages, "tool-call")
    )


@dataclass(frozen=True)
class _Pair:
    prompt: Sequence[JsonObject]
    baseline: Sequence[JsonObject]
    candidate: Sequence[JsonObject]
    seed: str

    @property
    def has_baseline(self) -> bool:
        return any(m.get("role") == "assistant" for m in self.baseline)

    @property
    def has_candidate(self) -> bool:
        return any(m.get("role") == "assistant" for m in self.candidate)


def _short(text: str, limit: int = MAX_DETAIL) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _pair_result(
    config: Mapping[str, JsonValue], value: float | None, passed: bool | None, detail: str
) -> JsonObject:
    return {
        "name": config["name"], "type": config["type"], "baseline": None,
        "candidate": value, "passed": passed, "baselinePassed": None, "detail": _short(detail),
    }  # fmt: skip


# A side's check: whether it passes (None: does not apply) and why.
SideCheck = tuple[bool | None, str]


def _side_result(
    config: Mapping[str, JsonValue],
    pair: _Pair,
    check: Callable[[str], SideCheck],
) -> JsonObject:
    """Run check on each side's text (a side without an answer: None)."""
    base: SideCheck = check(_text(pair.baseline)) if pair.has_baseline else (None, "")
    cand: SideCheck = check(_text(pair.candidate)) if pair.has_candidate else (None, "")
    detail = f"candidate: {cand[1] or 'no answer'}"
    if base[0] is not None:
        detail = f"baseline: {base[1]}; {detail}"
    return {
        "name": config["name"], "type": config["type"],
        "baseline": None if base[0] is None else float(base[0]),
        "candidate": None if cand[0] is None else float(cand[0]),
        "passed": cand[0], "baselinePassed": base[0], "detail": _short(detail),
    }  # fmt: skip


# --- patterns under a time budget ----------------------------------------------------------------


class _TimedOut(Exception):
    """A pattern ran past its evaluator's budget."""


_DEADLINE: ContextVar[float] = ContextVar("pattern_deadline", default=0.0)


def _search(pattern: str, text: str) -> bool:
    """Whether pattern matches in text, within the current evaluator's budget."""
    left = _DEADLINE.get() - time.process_time()
    if left <= 0:
        raise _TimedOut
    try:
        return regex.search(pattern, text, timeout=left) is not None
    except TimeoutError:
        raise _TimedOut from None


def _pattern_keyword(
    validator: Validator, pattern: str, instance: object, schema: object
) -> Iterator[ValidationError]:
    """JSON Schema's "pattern", matched within the budget."""
    if isinstance(instance, str) and not _search(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


@lru_cache(maxsize=64)
def _schema_validator(schema_json: str) -> Validator:
    """A validator of this schema (JSON text) whose patterns keep to the budget and whose
    $refs resolve only inside it (nothing is fetched)."""
    schema = json.loads(schema_json)
    kind = validators.validator_for(schema, default=validators.Draft202012Validator)
    bounded = validators.extend(kind, {"pattern": _pattern_keyword})
    return bounded(schema, registry=Registry())


# --- the deterministic evaluators ---------------------------------------------------------------


def _words(text: str, ignore_case: bool) -> list[str]:
    words = text.split()
    return [w.casefold() for w in words] if ignore_case else words


def _exact_match(config: Mapping[str, JsonValue], pair: _Pair) -> JsonObject:
    if not pair.has_baseline:
        return _pair_result(config, None, None, "no baseline answer")
    ignore = bool(config.get("ignoreCase"))
    base, cand = _words(_text(pair.baseline), ignore), _words(_text(pair.candidate), ignore)
    if base == cand:
        return _pair_result(config, 1.0, True, "same text")
    at = next((i for i, (b, c) in enumerate(zip(base, cand, strict=False)) if b != c), None)
    at = min(len(base), len(cand)) if at is None else at
    return _pair_result(config, 0.0, False, f"the texts differ from word {at + 1}")


def _contains(config: Mapping[str, JsonValue], pair: _Pair) -> JsonObject:
    needle = str(config.get("text", ""))
    ignore = bool(config.get("ignoreCase"))

    def check(text: str) -> SideCheck:
        found = needle.casefold() in text.casefold() if ignore else needle in text
        return found, "contains it" if found else f"does not contain {needle[:40]!r}"

    return _side_result(config, pair, check)


def _regex(config: Mapping[str, JsonValue], pair: _Pair) -> JsonObject:
    pattern = str(config.get("pattern", ""))

    def check(text: str) -> SideCheck:
        try:
            found = _search(pattern, text)
        except _TimedOut:
            return False, "timed out"
        return found, "matches" if found else "no match"

    return _side_result(config, pair, check)


def _json_text(text: str) -> str:
    """The JSON an answer gives: all of it, or its first ```json (or bare ```) fenced block."""
    stripped = text.strip()
    if stripped.startswith(("{", "[", '"')) or not stripped:
        return stripped
    fenced = regex.search(r"```(?:json)?[ \t]*\n(.*?)```", stripped, regex.DOTALL | regex.I)
    return fenced.group(1).strip() if fenced else stripped


def _json(config: Mapping[str, JsonValue], pair: _Pair) -> JsonObject:
    schema = config.get("schema")
    validator = None if schema is None else _schema_validator(json.dumps(schema, sort_keys=True))

    def check(text: str) -> SideCheck:
        try:
            value = json.loads(_json_text(text))
        except (ValueError, RecursionError) as exc:
            return False, f"not JSON ({exc})" if text.strip() else "not JSON (no text)"
        if validator is None:
            return True, "valid JSON"
        try:
            error = best_match(validator.iter_errors(value))
        except _TimedOut:
            return False, "timed out"
        except Exception as exc:  # an unresolvable $ref, a schema the validator trips on
            return False, f"the schema could not be applied ({type(exc).__name__})"
        if error is None:
            return True, "valid"
        return False, f"{error.json_path}: {error.message}"

    return _side_result(config, pair, check)


def _as_float(value: JsonValue, default: float) -> float:
    return float(value) if isinstance(value, int | float) else default


def _length_ratio(config: Mapping[str, JsonValue], pair: _Pair) -> JsonObject:
    base = len(_text(pair.baseline))
    if not base:
        return _pair_result(config, None, None, "no baseline text")
    ratio = round(len(_text(pair.candidate)) / base, 4)
    low, high = _as_float(config.get("min"), 0.5), _as_float(config.get("max"), 2.0)
    passed = low <= ratio <= high
    where = "within" if passed else "outside"
    return _pair_result(config, ratio, passed, f"ratio {ratio:g}, {where} {low:g} to {high:g}")


def _call_names(calls: Counter[tuple[str, str]]) -> str:
    return ", ".join(f"{name}({_short(args, 60)})" for name, args in sorted(calls.elements()))


def _tool_calls(config: Mapping[str, JsonValue], pair: _Pair) -> JsonObject:
    if not pair.has_baseline:
        return _pair_result(config, None, None, "no baseline answer")
    base, cand = _calls(pair.baseline), _calls(pair.candidate)
    if base == cand:
        count = sum(base.values())
        detail = f"same tool calls ({count})" if count else "no tool calls on either side"
        return _pair_result(config, 1.0, True, detail)
    differences = []
    if base - cand:
        differences.append(f"candidate lacks {_call_names(base - cand)}")
    if cand - base:
        differences.append(f"candidate adds {_call_names(cand - base)}")
    return _pair_result(config, 0.0, False, "; ".join(differences))


# --- the LLM judge -----------------------------------------------------------------------------


def _render(message: JsonObject, limit: int) -> str:
    """A message as the judge reads it: its text, its tool calls and results noted."""
    pieces = []
    for part in objects_in(message.get("parts")):
        kind = part.get("type")
        if kind == "text":
            pieces.append(str(part.get("text", "")))
        elif kind == "tool-call":
            args = json.dumps(part.get("input"), sort_keys=True, default=str)
            pieces.append(f"[calls {part.get('toolName')}({_short(args, 500)})]")
        elif kind == "tool-result":
            output = json.dumps(part.get("output"), default=str)
            pieces.append(f"[{part.get('toolName')} returned {_short(output, 500)}]")
    text = "\n".join(p for p in pieces if p)
    return text if len(text) <= limit else text[:limit] + "…"


def _answer(messages: Sequence[JsonObject]) -> str:
    text = "\n\n".join(_render(m, JUDGE_ANSWER) for m in messages if m.get("role") != "user")
    return text[:JUDGE_ANSWER]


def _judge_request(config: Mapping[str, JsonValue], pair: _Pair) -> GenerationRequest:
    answered = {str(m.get("id")) for m in pair.baseline}
    before = [m for m in pair.prompt if str(m.get("id")) not in answered]
    last_user = max((i for i, m in enumerate(before) if m.get("role") == "user"), default=-1)
    question = _render(before[last_user], JUDGE_ANSWER) if last_user >= 0 else ""
    earlier = [m for m in before[: max(last_user, 0)] if m.get("role") != "system"]
    conversation = "\n".join(f"{m.get('role')}: {_render(m, 2000)}" for m in earlier)
    messages = judge_messages(
        rubric=str(config.get("rubric") or DEFAULT_RUBRIC),
        conversation=conversation[-JUDGE_CONVERSATION:],
        question=question,
        answer_a=_answer(pair.baseline),
        answer_b=_answer(pair.candidate),
    )
    return GenerationRequest(
        run_id=f"judge-{pair.seed}",
        messages=messages,
        model=str(config.get("model") or ""),
        parameters={"judge": True, "temperature": 0, "maxTokens": 800, "seed": pair.seed},
    )


def _judge_text(config: Mapping[str, JsonValue], pair: _Pair) -> str:
    generator = get_generator(str(config.get("generator") or "demo"))
    text = ""
    for kind, data in generator.stream(_judge_request(config, pair)):
        if kind == "text-delta":
            text += str(data.get("delta", ""))
        if len(text) > JUDGE_ANSWER:
            break
    return text


def _llm_judge(config: Mapping[str, JsonValue], pair: _Pair) -> tuple[JsonObject, str]:
    """The judge's result and verdict ("" when it gave none)."""
    if not pair.has_baseline or not pair.has_candidate:
        return _pair_result(config, None, None, "no pair to judge"), ""
    try:
        text = _judge_text(config, pair)
    except Exception as exc:  # a provider's error, a timeout: the item still finishes
        return _pair_result(config, None, None, f"the judge failed: {exc}"), ""
    letter = parse_verdict(text)
    if not letter:
        detail = f"no VERDICT line in the judge's answer: {text}"
        return _pair_result(config, None, None, detail), ""
    verdict, value = JUDGE_OUTCOMES[letter]
    reason = "\n".join(line for line in text.splitlines() if "VERDICT" not in line.upper())
    detail = f"VERDICT {letter}: {reason}" if reason.strip() else f"VERDICT {letter}"
    return _pair_result(config, value, verdict != "loss", detail), verdict


# --- running them ------------------------------------------------------------------------------

_EVALUATE: dict[str, Callable[[Mapping[str, JsonValue], _Pair], JsonObject]] = {
    "exact-match": _exact_match,
    "contains": _contains,
    "regex": _regex,
    "json": _json,
    "length-ratio": _length_ratio,
    "tool-calls": _tool_calls,
}


def _disagree(result: Mapping[str, JsonValue]) -> bool:
    """Whether a result splits the pair: one side passes and the other fails, or a pair
    evaluator other than the judge (which speaks through the verdict) fails."""
    passed, baseline_passed = result.get("passed"), result.get("baselinePassed")
    if result.get("type") in PAIR_TYPES:
        return result.get("type") != "llm-judge" and passed is False
    return passed is not None and baseline_passed is not None and passed != baseline_passed


def evaluate_pair(
    configs: Sequence[JsonObject],
    *,
    prompt: Sequence[JsonObject],
    baseline: Sequence[JsonObject],
    candidate: Sequence[JsonObject],
    seed: str,
) -> PairEvaluation:
    """Run the evaluators on a pair (prompt: the conversation up to the fork point; seed makes
    the judge's request repeatable). Configs are those check_evaluators gave."""
    pair = _Pair(prompt, baseline, candidate, seed)
    results: list[JsonObject] = []
    verdict = ""
    for config in configs:
        kind = str(config.get("type"))
        config = {"name": kind, **config}
        token = _DEADLINE.set(time.process_time() + PATTERN_BUDGET)
        try:
            if kind == "llm-judge":
                result, verdict = _llm_judge(config, pair)
            elif kind in _EVALUATE:
                result = _EVALUATE[kind](config, pair)
            else:
                result = _pair_result(config, None, None, f"unknown evaluator type {kind!r}")
        except Exception as exc:  # one evaluator's failure must not lose the others' results
            logger.exception("evaluator %s failed", config.get("name"))
            result = _pair_result(config, None, None, f"the evaluator failed: {exc}")
        finally:
            _DEADLINE.reset(token)
        results.append(result)
    disagreement = any(_disagree(r) for r in results) or verdict in ("win", "loss")
    return PairEvaluation(results=results, verdict=verdict, disagreement=disagreement)
