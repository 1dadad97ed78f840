"""Evaluators of an experiment's pairs (issue 29): deterministic checks of the baseline and
the candidate answers, and an LLM judge. (Foundation: exact match only; the full set lands
with the evaluators' slice.)"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from transcripts.errors import InvalidInput
from transcripts.jsonvalue import JsonObject, objects_in

TYPES = ("exact-match",)


@dataclass(frozen=True)
class PairEvaluation:
    """The evaluators' results on one pair: one JSON object per evaluator, the LLM judge's
    verdict ("win", "loss", "tie", or "" without one), and whether the two sides disagree."""

    results: list[JsonObject] = field(default_factory=list)
    verdict: str = ""
    disagreement: bool = False


def check_evaluators(raw: object) -> list[JsonObject]:
    """The evaluator configs, checked (InvalidInput naming the field "evaluators")."""
    if raw in (None, ""):
        return []
    if not isinstance(raw, list):
        raise InvalidInput("evaluators must be a list", field="evaluators")
    checked: list[JsonObject] = []
    for entry in raw:
        if not isinstance(entry, dict) or entry.get("type") not in TYPES:
            raise InvalidInput(
                f"evaluators: each needs a type, one of {', '.join(TYPES)}", field="evaluators"
            )
        checked.append({"type": entry["type"], "name": str(entry.get("name") or entry["type"])})
    return checked


def _text(messages: Sequence[JsonObject]) -> str:
    return "".join(
        str(p.get("text", ""))
        for m in messages
        if m.get("role") == "assistant"
        for p in objects_in(m.get("parts"))
        if isinstance(p, dict) and p.get("type") == "text"
    )


def evaluate_pair(
    configs: Sequence[JsonObject],
    *,
    prompt: Sequence[JsonObject],
    baseline: Sequence[JsonObject],
    candidate: Sequence[JsonObject],
    seed: str,
) -> PairEvaluation:
    """Run the evaluators on a pair (prompt: the conversation up to the fork point)."""
    results: list[JsonObject] = []
    for config in configs:
        same = " ".join(_text(baseline).split()) == " ".join(_text(candidate).split())
        results.append(
            {
                "name": config["name"], "type": config["type"], "baseline": None,
                "candidate": 1.0 if same else 0.0, "passed": same, "baselinePassed": None,
                "detail": "same text" if same else "the texts differ",
            }
        )  # fmt: skip
    disagreement = any(r.get("passed") is False for r in results)
    return PairEvaluation(results=results, disagreement=disagreement)
