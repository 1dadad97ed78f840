"""The format registry and format detection."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings

from tests.formats.helpers import through_json
from tests.formats.strategies import linear_threads
from transcripts.formats import FORMATS, detect_format
from transcripts.formats.document import TreeThread


def test_it_lists_every_format_with_its_converters() -> None:
    assert set(FORMATS) == {
        "canonical",
        "threadprotocol",
        "openai",
        "anthropic",
        "gemini",
        "chatgpt",
        "claude-ai",
        "open-webui",
        "librechat",
        "pydantic-ai",
        "ai-sdk",
        "markdown",
    }
    assert FORMATS["chatgpt"].exporter is None
    assert FORMATS["markdown"].importer is None
    assert FORMATS["markdown"].content_type.startswith("text/markdown")
    assert all(spec.key == key for key, spec in FORMATS.items())
    assert {spec.extension for spec in FORMATS.values()} == {"json", "md"}


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(linear_threads())
def test_it_detects_every_json_export(thread: TreeThread) -> None:
    for key, spec in FORMATS.items():
        if spec.exporter is None or key == "markdown":
            continue
        exported = through_json(spec.exporter(thread))
        detected = detect_format(exported)
        # A chat of plain text reads the same as OpenAI or Anthropic: either is a right guess.
        assert detected == key or {detected, key} <= {"openai", "anthropic"}, (key, detected)


def test_it_is_unsure_about_documents_of_no_known_shape() -> None:
    assert detect_format({"hello": "world"}) is None
    assert detect_format([]) is None
    assert detect_format([1, 2]) is None
    assert detect_format("text") is None
    assert detect_format({"messages": "x"}) is None


def test_it_tells_anthropic_from_openai_by_their_blocks() -> None:
    anthropic_body = {"messages": [{"role": "user", "content": [{"type": "tool_result"}]}]}
    openai_body = {"messages": [{"role": "tool", "content": "x", "tool_call_id": "c"}]}
    assert detect_format(anthropic_body) == "anthropic"
    assert detect_format(openai_body) == "openai"
    assert detect_format({"system": "x", "messages": []}) == "anthropic"
