"""The files load where they are meant to: Hugging Face `datasets`, and the OpenAI SDK's types
of chat messages and tools (the SDK has no type for a training line: its keys are checked
against OpenAI's fine-tuning documentation here)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import datasets as hf_datasets
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from openai.types.chat import (
    ChatCompletionAssistantMessageParam,
    ChatCompletionMessageParam,
    ChatCompletionToolParam,
)
from pydantic import ConfigDict, TypeAdapter

from tests.base import Team
from tests.datasets.conftest import answer, regenerated_thread
from tests.datasets.test_rows import tool_thread
from tests.factories import ask, last_message, make_thread

pytestmark = pytest.mark.django_db

# Unknown keys are errors, so a key OpenAI does not take cannot slip through.
STRICT = ConfigDict(extra="forbid")
MESSAGES = TypeAdapter(list[ChatCompletionMessageParam], config=STRICT)
ASSISTANT_OUTPUT = TypeAdapter(list[ChatCompletionAssistantMessageParam], config=STRICT)
TOOLS = TypeAdapter(list[ChatCompletionToolParam], config=STRICT)
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "weather",
        "description": "The weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


def exported(tmp_path: Path, kind: str, fmt: str, *flags: str) -> Path:
    """The project's dataset written by the management command; the file."""
    out = tmp_path / f"{kind}-{fmt}.jsonl"
    call_command(
        "export_dataset", kind, "--format", fmt, "--project", "alpha", *flags, "-o", str(out)
    )
    return out


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def first_text(row: dict[str, Any]) -> str:
    """The content of a row's first message, whatever the format."""
    messages = row.get("messages") or row.get("prompt") or row["input"]["messages"]
    return str(messages[0]["content"])


@pytest.fixture
def content(team: Team) -> None:
    """Two regenerated threads, a tool round trip, and a thread imported with tools."""
    regenerated_thread(team)
    regenerated_thread(team, title="Again")
    tool_thread(team)
    thread = make_thread(
        "With tools", project=team.alpha, metadata={"extra": {"openai": {"tools": [WEATHER_TOOL]}}}
    )
    prompt = last_message(ask(thread, "Weather?"))
    answer(thread, "Rain.")
    answer(thread, "Sun.", fork_from=prompt.id)


@pytest.mark.parametrize(
    ("kind", "fmt", "flags", "rows"),
    [
        ("preferences", "trl", (), 6),
        ("preferences", "openai", (), 5),
        ("preferences", "openai", ("--with-metadata",), 5),
        ("sft", "openai", ("--branches", "all"), 10),
        ("sft", "hf", ("--branches", "all"), 10),
    ],
)
def test_every_format_loads_with_the_datasets_library(
    content: None, tmp_path: Path, kind: str, fmt: str, flags: tuple[str, ...], rows: int
) -> None:
    path = exported(tmp_path, kind, fmt, *flags)
    loaded = hf_datasets.load_dataset(
        "json", data_files=str(path), split="train", cache_dir=str(tmp_path / "cache")
    )
    assert loaded.num_rows == rows
    written = lines(path)
    assert set(loaded.column_names) == {key for row in written for key in row}
    assert [first_text(row) for row in loaded] == [first_text(row) for row in written]


def test_openai_preference_rows_validate_against_the_sdk_types(
    content: None, tmp_path: Path
) -> None:
    rows = lines(exported(tmp_path, "preferences", "openai"))
    assert rows
    for row in rows:
        assert set(row) == {"input", "preferred_output", "non_preferred_output"}
        assert set(row["input"]) <= {"messages", "tools", "parallel_tool_calls"}
        MESSAGES.validate_python(row["input"]["messages"])
        TOOLS.validate_python(row["input"].get("tools", []))
        for output in (row["preferred_output"], row["non_preferred_output"]):
            assert len(ASSISTANT_OUTPUT.validate_python(output)) == 1
    assert [row["input"].get("tools") for row in rows].count([WEATHER_TOOL]) == 1


def test_openai_chat_rows_validate_against_the_sdk_types(content: None, tmp_path: Path) -> None:
    rows = lines(exported(tmp_path, "sft", "openai", "--branches", "all"))
    for row in rows:
        assert set(row) <= {"messages", "tools", "parallel_tool_calls"}
        MESSAGES.validate_python(row["messages"])
        TOOLS.validate_python(row.get("tools", []))
    assert any("tool_calls" in m for row in rows for m in row["messages"])


def test_the_strict_check_refuses_a_key_openai_does_not_take() -> None:
    with pytest.raises(ValueError, match="metadata"):
        MESSAGES.validate_python([{"role": "user", "content": "hi", "metadata": {}}])


def test_the_command_refuses_an_unknown_project_or_format(content: None, tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="no project"):
        call_command("export_dataset", "sft", "--project", "nope")
    with pytest.raises(CommandError, match="format must be one of openai, hf"):
        call_command("export_dataset", "sft", "--project", "alpha", "--format", "trl")
