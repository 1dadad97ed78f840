"""The LLM judge's prompt and verdict, shared by the evaluators (which ask) and the demo
generator (which answers judge requests deterministically).

The prompt is one user message with tagged sections (the conversation so far, the question,
answer A = the baseline, answer B = the candidate) after a system message giving the rubric;
the judge ends its answer with a line `VERDICT: A`, `VERDICT: B` or `VERDICT: TIE`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from transcripts.jsonvalue import JsonObject

DEFAULT_RUBRIC = "Which answer serves the user better: correct, complete, clear and concise?"
INSTRUCTIONS = (
    "You compare two answers to the last question of a conversation. Judge them under the "
    "rubric below, explain your choice in one or two sentences, then end with exactly one line: "
    "VERDICT: A (answer A is better), VERDICT: B (answer B is better) or VERDICT: TIE.\n\n"
    "Rubric: {rubric}"
)
_SECTIONS = re.compile(
    r"<question>\n(?P<question>.*?)\n</question>\n\n"
    r"<answer_a>\n(?P<a>.*)\n</answer_a>\n\n<answer_b>\n(?P<b>.*)\n</answer_b>",
    re.DOTALL,
)
_VERDICT = re.compile(r"^[\W_]*VERDICT[\W_]*:[\W_]*(A|B|TIE)\b", re.IGNORECASE | re.MULTILINE)


@dataclass(frozen=True)
class JudgeSections:
    """What a judge prompt asks about: the question and the two answers."""

    question: str
    answer_a: str
    answer_b: str


def judge_prompt(*, conversation: str, question: str, answer_a: str, answer_b: str) -> str:
    """The user message of a judge request."""
    return (
        f"<conversation>\n{conversation}\n</conversation>\n\n"
        f"<question>\n{question}\n</question>\n\n"
        f"<answer_a>\n{answer_a}\n</answer_a>\n\n<answer_b>\n{answer_b}\n</answer_b>\n\n"
        "Which answer is better under the rubric? End with the VERDICT line."
    )


def judge_messages(
    *, rubric: str, conversation: str, question: str, answer_a: str, answer_b: str
) -> list[JsonObject]:
    """The canonical messages of a judge request: the rubric, then the prompt."""
    prompt = judge_prompt(
        conversation=conversation, question=question, answer_a=answer_a, answer_b=answer_b
    )
    return [
        {
            "id": "judge-rubric", "parentMessageId": None, "role": "system",
            "parts": [{"type": "text", "text": INSTRUCTIONS.format(rubric=rubric)}],
            "metadata": {},
        },
        {
            "id": "judge-prompt", "parentMessageId": "judge-rubric", "role": "user",
            "parts": [{"type": "text", "text": prompt}], "metadata": {},
        },
    ]  # fmt: skip


def judge_sections(text: str) -> JudgeSections | None:
    """The question and answers of a judge prompt, None when text is not one."""
    found = _SECTIONS.search(text)
    if found is None:
        return None
    return JudgeSections(found["question"], found["a"], found["b"])


def parse_verdict(text: str) -> str:
    """The judge's verdict, "A", "B" or "TIE" (its last VERDICT line), "" without one."""
    found = _VERDICT.findall(text)
    return str(found[-1]).upper() if found else ""
