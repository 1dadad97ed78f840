"""export(import(doc)) == doc through the database: import_data, then export_thread."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.base import Team
from tests.formats.doc_strategies import (
    anthropic_documents,
    canonical_documents,
    gemini_documents,
    openai_documents,
)
from tests.formats.doc_strategies_agents import ai_sdk_documents, pydantic_ai_documents
from transcripts import interchange
from transcripts.models import Message, Thread

pytestmark = pytest.mark.django_db

BIG_FLOAT = re.compile(r"\de\+(1[6-9]|[2-9][0-9]|[0-9]{3})")
FIXTURES = Path(__file__).parent.parent / "formats" / "fixtures"
SETTINGS = settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
STRATEGIES: dict[str, st.SearchStrategy[Any]] = {
    "openai": openai_documents(),
    "anthropic": anthropic_documents(),
    "gemini": gemini_documents(),
    "pydantic-ai": pydantic_ai_documents(),
    "ai-sdk": ai_sdk_documents(),
}


def storable(document: Any) -> bool:
    """Whether PostgreSQL jsonb holds the document as it is: it has no NUL character, and
    it writes a float of 1e16 or more out in digits, which JSON reads back as an integer
    (in the document or in JSON text within it, such as tool call arguments)."""
    text = json.dumps(document)
    return "\\u0000" not in text and BIG_FLOAT.search(text) is None


def through_database(team: Team, document: Any, fmt: str) -> Any:
    """The document imported into project alpha, then that thread exported in the same format."""
    result = interchange.import_data(document, fmt, project=team.alpha)
    (thread_id,) = result.thread_ids
    exported = interchange.export_thread(Thread.objects.get(pk=thread_id), fmt)
    return json.loads(exported.content)


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("openai_chat.json", "openai"),
        ("anthropic_messages.json", "anthropic"),
        ("gemini_rest.json", "gemini"),
        ("pydantic_ai_run.json", "pydantic-ai"),
        ("ai_sdk_ui_messages.json", "ai-sdk"),
    ],
)
def test_a_real_sample_comes_back_exactly_through_the_database(
    team: Team, name: str, fmt: str
) -> None:
    document = json.loads((FIXTURES / name).read_text())
    assert through_database(team, document, fmt) == document


@pytest.mark.parametrize("fmt", sorted(STRATEGIES))
def test_generated_documents_come_back_exactly_through_the_database(team: Team, fmt: str) -> None:
    @SETTINGS
    @given(STRATEGIES[fmt].filter(storable))
    def check(document: Any) -> None:
        assert through_database(team, document, fmt) == document

    check()


@SETTINGS
@given(canonical_documents.filter(storable))
def test_a_canonical_document_keeps_its_messages_through_the_database(
    team: Team, document: dict[str, Any]
) -> None:
    # Our own ids, times and runs are the ledger's (see test_canonical_lossless); what a
    # canonical document says of each message comes back as it said it.
    result = interchange.import_data(document, "canonical", project=team.alpha)
    (thread_id,) = result.thread_ids
    stored = {
        m.metadata.get("sourceMessageId", m.id): m.as_canonical()
        for m in Message.objects.filter(thread_id=thread_id)
    }
    for message in document["messages"]:
        got = stored[message["id"]]
        assert (got["role"], got["parts"]) == (message["role"], message["parts"])
