"""The offline demo generator: deterministic answers about what was asked, at a realistic pace."""

from __future__ import annotations

import hashlib
import random
import re
import time
from collections.abc import Callable, Iterator
from typing import ClassVar

from transcripts.generation.generators.base import GenerationRequest, Generator, StreamEvent
from transcripts.generation.generators.judging import judge_sections
from transcripts.jsonvalue import JsonObject, objects_in

# The models it offers, and how many sentences of body each writes.
MODELS = {"demo-1": (2, 3), "demo-brief": (1, 1), "demo-detailed": (4, 5)}
DEFAULT_MODEL = "demo-1"

_STOPWORDS = frozenset(
    word
    for line in (
        "a about above after again all am an and any are as at be because been before being",
        "below between both but by can could did do does doing down during each few for from",
        "further had has have having he her here hers how i if in into is it its just me more",
        "most my no nor not now of off on once only or other our out over own same she should",
        "so some such than that the their them then there these they this those through to too",
        "under until up very was we were what when where which while who whom why will with",
        "would you your yours please tell explain give show want need know think make get let",
        "like use using much many really",
    )
    for word in line.split()
)
_OPENINGS = [
    "You asked about {topic}.",
    "So the question is about {topic}.",
    "Let's look at {topic}.",
    "Here is how I see {topic}.",
]
_SENTENCES = [
    "The heart of {a} is what it has to guarantee; everything else about {a} can change later.",
    "Start with {a} in its simplest form, measure it, and only then tune {b}.",
    "{A} and {b} pull in different directions, so decide which one matters more here.",
    "A common mistake is to treat {a} as a detail: it shapes how {b} behaves.",
    "If {b} gets slow or confusing, look at {a} first.",
    "Write down what {a} must never do, then check every change to {b} against it.",
    "For {a}, a small working example teaches more than a long plan.",
    "Keep {a} separate from {b}; each stays easier to reason about on its own.",
]
_CLOSINGS = [
    "Want me to go deeper on {a}?",
    "I can sketch an example of {a} if that helps.",
    "Does that answer your question about {a}?",
    "Happy to compare other approaches to {a}.",
]
_CONTINUATIONS = [
    "To pick up where I stopped: the next step is to try it on a small case.",
    "Continuing from there, the rest follows from the same idea.",
]
_TOOLS: list[tuple[str, str, JsonObject]] = [
    ("search_docs", "query", {"hits": 3, "top": "docs"}),
    ("calculator", "expression", {"result": 117647.06}),
    ("lookup", "term", {"found": True}),
]


def _last_user_text(messages: list[JsonObject]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user":
            return " ".join(
                str(p.get("text", ""))
                for p in objects_in(message.get("parts"))
                if p.get("type") == "text"
            )
    return ""


def key_words(prompt: str, limit: int = 4) -> list[str]:
    """The prompt's first few distinct words that carry meaning (no stopwords, no numbers)."""
    words: dict[str, str] = {}
    for found in re.finditer(r"[^\W\d_][\w'-]*", prompt):
        word = found.group().strip("'-")
        key = word.lower()
        if len(word) > 2 and key not in _STOPWORDS and key not in words:
            # Names keep their case ("Paris", "PostgreSQL"); a sentence's first word does not.
            before = prompt[: found.start()].rstrip()
            opens_sentence = not before or before.endswith((".", "?", "!"))
            words[key] = key if opens_sentence and word[1:] == word[1:].lower() else word
    return list(words.values())[:limit] or ["this"]


def _topic(words: list[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def _rng(prompt: str, model: str, seed: str) -> random.Random:
    return random.Random(hashlib.sha256(f"{seed}:{model}:{prompt}".encode()).digest())


def demo_answer(prompt: str, *, model: str = DEFAULT_MODEL, seed: str = "") -> str:
    """The whole answer the demo model gives to prompt; the same seed gives the same answer."""
    rng = _rng(prompt, model, seed)
    words = key_words(prompt)
    low, high = MODELS.get(model, MODELS[DEFAULT_MODEL])
    sentences = [rng.choice(_OPENINGS).format(topic=_topic(words))]
    for template in rng.sample(_SENTENCES, k=rng.randint(low, high)):
        a, b = rng.choice(words), rng.choice(words)
        if b == a and len(words) > 1:
            b = next(w for w in words if w != a)
        elif b == a:
            b = "the rest"
        sentences.append(template.format(a=a, A=a[0].upper() + a[1:], b=b))
    sentences.append(rng.choice(_CLOSINGS).format(a=rng.choice(words)))
    return " ".join(sentences)


def continuation(partial: str, *, prompt: str, model: str, seed: str) -> str:
    """What follows partial: the rest of the same answer when partial is its beginning (the
    same seed), else a few sentences that carry it on."""
    whole = demo_answer(prompt, model=model, seed=seed)
    if whole.startswith(partial) and len(whole) > len(partial):
        return whole[len(partial) :]
    rng = _rng(partial, model, seed)
    gap = "" if not partial or partial.endswith((" ", "\n")) else " "
    closing = rng.choice(_CLOSINGS).format(a=rng.choice(key_words(prompt)))
    return f"{gap}{rng.choice(_CONTINUATIONS)} {closing}"


def _tokens(text: str) -> Iterator[str]:
    word = ""
    for char in text:
        word += char
        if char == " ":
            yield word
            word = ""
    if word:
        yield word


class DemoGenerator(Generator):
    """Answers the last user message from its key words, without any API key.

    The answer depends on the prompt, the model and a seed (the `seed` parameter, else the run
    id), so two regenerations differ and a test can predict each (`demo_answer`). A run that
    continues a stopped answer (the `continues` parameter) streams only what follows it. With
    the `judge` parameter it judges the two answers of an LLM-judge prompt (`demo_verdict`).
    """

    name: ClassVar[str] = "demo"
    label: ClassVar[str] = "Demo (offline)"

    def default_model(self) -> str:
        return DEFAULT_MODEL

    def models(self) -> list[str]:
        return list(MODELS)

    def stream(self, request: GenerationRequest) -> Iterator[StreamEvent]:
        if request.parameters.get("judge"):
            yield from self._judge(request)
            return
        prompt = _last_user_text(request.messages)
        model = request.model or DEFAULT_MODEL
        seed = str(request.parameters.get("seed") or request.run_id)
        rng = _rng(prompt, model, f"{seed}:steps")
        # delayMs: per token; 0 runs at full speed (benchmarks, tests).
        delay_ms = request.number("delayMs")
        delay = (25 if delay_ms is None else delay_ms) / 1000
        max_tokens = int(request.number("maxTokens") or 400)

        def pause() -> None:
            if delay > 0:
                time.sleep(delay * rng.uniform(0.5, 1.5))

        yield ("step-started", {})
        if request.continues:
            text = continuation(request.partial_answer, prompt=prompt, model=model, seed=seed)
        else:
            text = demo_answer(prompt, model=model, seed=seed)
            yield from self._thinking(prompt, rng, pause)
            yield from self._tool_step(prompt, rng, pause, seed)
        count = 0
        for token in _tokens(text):
            if count >= max_tokens:
                break
            pause()
            count += 1
            yield ("text-delta", {"delta": token})
        finish = "length" if count >= max_tokens else "stop"
        usage = {"inputTokens": len(prompt.split()) + 20, "outputTokens": count}
        yield ("step-finished", {"finishReason": finish, "usage": usage})

    def _thinking(
        self, prompt: str, rng: random.Random, pause: Callable[[], None]
    ) -> Iterator[StreamEvent]:
        if rng.random() < 0.5:
            thought = (
                f"The user asked about {_topic(key_words(prompt))}. "
                "I should answer directly, then add one practical detail."
            )
            for token in _tokens(thought):
                pause()
                yield ("reasoning", {"text": token})

    def _tool_step(
        self, prompt: str, rng: random.Random, pause: Callable[[], None], seed: str
    ) -> Iterator[StreamEvent]:
        if rng.random() < 0.35:
            name, argument, output = rng.choice(_TOOLS)
            call_id = f"call_{hashlib.sha256(seed.encode()).hexdigest()[:12]}"
            args = {argument: " ".join(key_words(prompt))}
            pause()
            yield ("tool-call", {"toolCallId": call_id, "toolName": name, "input": args})
            yield ("step-finished", {"finishReason": "tool-calls", "usage": {"outputTokens": 12}})
            pause()
            yield (
                "tool-result",
                {"toolCallId": call_id, "toolName": name, "output": output, "isError": False},
            )
            yield ("step-started", {})

    def _judge(self, request: GenerationRequest) -> Iterator[StreamEvent]:
        """Judge mode (the `judge` parameter): a sentence and a VERDICT line, from
        `demo_verdict`, at full speed."""
        sections = judge_sections(_last_user_text(request.messages))
        if sections is None:
            text = "I could not find the two answers to compare."
        else:
            letter, reason = demo_verdict(sections.question, sections.answer_a, sections.answer_b)
            text = f"{reason}\nVERDICT: {letter}"
        yield ("step-started", {})
        count = 0
        for token in _tokens(text):
            count += 1
            yield ("text-delta", {"delta": token})
        read = len(_last_user_text(request.messages).split())
        usage = {"inputTokens": read, "outputTokens": count}
        yield ("step-finished", {"finishReason": "stop", "usage": usage})


def _covered(words: list[str], answer: str) -> int:
    text = answer.lower()
    return sum(1 for w in words if re.search(rf"(?<!\w){re.escape(w.lower())}(?!\w)", text))


def demo_verdict(question: str, answer_a: str, answer_b: str) -> tuple[str, str]:
    """How the demo judges two answers to question: the one that covers more of the question's
    key words wins, then the shorter (whitespace-normalised characters); else a tie. The
    verdict ("A", "B" or "TIE") and a sentence saying why."""
    words = key_words(question)
    a, b = _covered(words, answer_a), _covered(words, answer_b)
    if a != b:
        letter = "A" if a > b else "B"
        return letter, (
            f"Answer {letter} covers {max(a, b)} of the question's {len(words)} key words, "
            f"the other {min(a, b)}."
        )
    long_a, long_b = len(" ".join(answer_a.split())), len(" ".join(answer_b.split()))
    if long_a != long_b:
        letter = "A" if long_a < long_b else "B"
        return letter, (
            f"Both cover {a} of the question's {len(words)} key words; answer {letter} is "
            f"shorter ({min(long_a, long_b)} characters against {max(long_a, long_b)})."
        )
    return "TIE", f"Both cover {a} of the question's {len(words)} key words and are as long."
