"""The Markdown transcript."""

from __future__ import annotations

from transcripts.formats.document import TreeThread, make_message
from transcripts.formats.markdown import export_markdown


def thread() -> TreeThread:
    """A small thread with every part type, a hidden message and an unused branch."""
    messages = [
        make_message(
            "s", None, "system", [{"type": "text", "text": "Be brief."}], None, {"hidden": True}
        ),
        make_message(
            "u",
            "s",
            "user",
            [
                {"type": "text", "text": "Plot this"},
                {
                    "type": "file",
                    "mimeType": "image/png",
                    "url": "https://x.test/a.png",
                    "name": "a.png",
                },
                {
                    "type": "file",
                    "mimeType": "application/pdf",
                    "url": "data:application/pdf;base64,JVBE",
                },
            ],
        ),
        make_message(
            "a",
            "u",
            "assistant",
            [
                {"type": "reasoning", "text": "Think ``` hard"},
                {
                    "type": "tool-call",
                    "toolCallId": "c1",
                    "toolName": "python",
                    "input": {"code": "```"},
                },
            ],
            "2025-01-01T00:00:00Z",
            {"agentId": "bot", "model": "gpt-4o"},
        ),
        make_message(
            "t",
            "a",
            "tool",
            [
                {
                    "type": "tool-result",
                    "toolCallId": "c1",
                    "toolName": "python",
                    "output": "ok",
                    "isError": True,
                }
            ],
        ),
        make_message("other", "u", "assistant", [{"type": "text", "text": "OTHER BRANCH"}]),
    ]
    return TreeThread(
        title="Plots",
        messages=messages,
        active_leaf="t",
        agents={"bot": {"agent_name": "Plot Bot"}},
    )


def test_it_renders_the_active_path_readably() -> None:
    text = export_markdown(thread())
    assert text.startswith("# Plots\n")
    assert "## User" in text
    assert "## Assistant · Plot Bot · `gpt-4o`" in text
    assert "<details>\n<summary>Reasoning</summary>\n\nThink ``` hard\n\n</details>" in text
    assert '**Tool call** `python` (`c1`)\n\n````json\n{\n  "code": "```"\n}\n````' in text
    assert "**Tool error** `python` (`c1`)\n\n```text\nok\n```" in text
    assert "![a.png](<https://x.test/a.png>)" in text
    assert "(application/pdf, inline)" in text
    assert "JVBE" not in text


def test_it_leaves_out_hidden_messages_and_other_branches() -> None:
    text = export_markdown(thread())
    assert "Be brief." not in text
    assert "OTHER BRANCH" not in text


def test_it_renders_an_empty_thread() -> None:
    assert (
        export_markdown(TreeThread(title="", messages=[], active_leaf=None))
        == "# Untitled thread\n"
    )
