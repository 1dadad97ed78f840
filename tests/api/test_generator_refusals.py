"""The API refuses a generator that cannot run on this server (issue 27): a 422 that says
why and changes nothing."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.conftest import ApiClient, error_of
from transcripts.models import Message, Run, Thread

pytestmark = pytest.mark.django_db

NO_KEY = "OPENAI_API_KEY not set"


def _counts() -> tuple[int, int, int]:
    return Thread.objects.count(), Message.objects.count(), Run.objects.count()


@pytest.fixture
def no_key(settings: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A server with no OpenAI key and no base URL."""
    for name in ("OPENAI_API_KEY", "TRANSCRIPTS_OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    settings.TRANSCRIPTS_OPENAI_API_KEY = ""
    settings.TRANSCRIPTS_OPENAI_BASE_URL = ""


def test_the_chat_api_refuses_an_unavailable_generator(no_key: None, api: ApiClient) -> None:
    message = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Hi"}]}
    before = _counts()
    response = api.post(
        "/chat",
        {
            "id": "c-unavailable",
            "messages": [message],
            "trigger": "submit-message",
            "generator": "openai",
        },
    )
    assert response.status_code == 422
    assert NO_KEY in error_of(response)["message"]
    assert _counts() == before
