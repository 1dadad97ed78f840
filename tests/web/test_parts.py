"""How a message's parts read: tool calls with their results, sizes, data, hidden runs, images."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from tests.factories import make_run, make_thread
from tests.web.test_safety import PAYLOADS, _assert_inert
from transcripts import interchange
from transcripts.ledger.default_project import default_project
from transcripts.models import Message, Thread
from transcripts.web import rendering
from transcripts.web.presenters.messages import MessageItem, message_items
from transcripts.web.presenters.parts import FOLD_CHARS, annotation_view, part_view, payload

CHATGPT = (
    Path(__file__).resolve().parents[1] / "formats" / "fixtures" / "chatgpt_conversations.json"
)
PNG = (  # one pixel
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQ"
    "DwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


def _call(call_id: str = "c1", name: str = "lookup", arguments: Any = None) -> dict[str, Any]:
    return {"type": "tool-call", "toolCallId": call_id, "toolName": name, "input": arguments}


def _result(call_id: str = "c1", output: Any = "ok", **extra: Any) -> dict[str, Any]:
    return {"type": "tool-result", "toolCallId": call_id, "toolName": "lookup", "output": output,
            **extra}  # fmt: skip


def _said(role: str, text: str, **metadata: Any) -> tuple[str, dict[str, Any]]:
    """A message event of one text part."""
    return ("message", {"role": role, "parts": [{"type": "text", "text": text}],
                        "metadata": metadata})  # fmt: skip


def _items(*messages: tuple[str, list[dict[str, Any]], dict[str, Any]]) -> list[MessageItem]:
    """Cards of one committed run of messages (role, parts, metadata)."""
    thread = make_thread("Parts")
    run = make_run(
        thread,
        *[("message", {"role": r, "parts": p, "metadata": m}) for r, p, m in messages],
    )
    rows = list(Message.objects.filter(run=run).select_related("run").order_by("position"))
    return message_items(thread, rows)


def _body(html: str, message: Message) -> str:
    """The HTML of one message's card."""
    start = html.index(f'id="m-{message.id}"')
    end = html.find('id="m-', start + 10)
    return html[start : end if end > 0 else len(html)]


# --- tool calls and results ----------------------------------------------------------------


@pytest.mark.django_db
def test_a_result_joins_its_call_and_its_message_folds_away() -> None:
    call, result, answer = _items(
        ("assistant", [_call()], {}),
        ("tool", [_result()], {}),
        ("assistant", [{"type": "text", "text": "done"}], {}),
    )
    assert [r.output for r in call.parts[0].results] == ["ok"]
    assert result.parts[0].joined and result.folded
    assert not call.folded and not answer.folded


@pytest.mark.django_db
def test_every_result_of_a_call_joins_it_and_a_message_with_more_keeps_its_card() -> None:
    image = {"type": "file", "mimeType": "image/png", "url": PNG}
    call, first, second = _items(
        ("assistant", [_call()], {}),
        ("tool", [_result(output="printed")], {}),
        ("tool", [_result(output=""), image], {}),
    )
    assert [r.output for r in call.parts[0].results] == ["printed", ""]
    # The empty second output is not shown as a section of its own.
    assert [r.output for r in call.parts[0].shown_results] == ["printed"]
    assert first.folded and not second.folded


@pytest.mark.django_db
def test_a_result_message_with_anything_of_its_own_keeps_its_card() -> None:
    _, flagged, with_error = _items(
        ("assistant", [_call("c1"), _call("c2")], {}),
        ("tool", [_result("c1")], {"flagged": True}),
        ("tool", [_result("c2")], {"errors": [{"message": "timeout"}]}),
    )
    assert not flagged.folded and not with_error.folded


@pytest.mark.django_db
def test_a_result_without_its_call_in_view_stays_a_result_card() -> None:
    (orphan,) = _items(("tool", [_result("elsewhere")], {}))
    assert not orphan.parts[0].joined and not orphan.folded


@pytest.mark.django_db
def test_the_conversation_shows_a_call_with_its_result_and_no_placeholder(
    viewer_client: Client,
) -> None:
    thread = make_thread("Weather")
    make_run(
        thread,
        _said("user", "Weather?"),
        ("message", {"role": "assistant", "parts": [_call("w1", "get_forecast", {"city": "P"})]}),
        ("message", {"role": "tool", "parts": [_result("w1", {"temp": 18, "sky": "cloudy"})]}),
        _said("assistant", "18° and cloudy"),
    )  # fmt: skip
    html = viewer_client.get(f"/t/{thread.id}/").content.decode()
    tool = Message.objects.get(thread=thread, role="tool")
    assert "shown with its call" not in html and "tool-joined" not in html
    assert html.count("<article") == 3  # user, call, answer: the result's message folds away
    assert f'<div id="m-{tool.id}" class="msg-folded"' in html
    card = html[html.index('class="tool tool-card') :]
    card = card[: card.index("</details>")]
    assert '<code class="tool-name">get_forecast</code>' in card
    assert "Input" in card and '"P"' in card and "Result" in card and "cloudy" in card
    assert '<span class="tag tag-ok">done</span>' in card
    assert "Show " not in card  # short: both open


# --- sizes --------------------------------------------------------------------------------


def test_short_payloads_are_open_and_long_ones_fold_with_their_size() -> None:
    assert not payload({"q": "weather in Paris"}).folded
    many_lines = payload({f"k{i}": i for i in range(20)})
    assert many_lines.folded and many_lines.lines == 22
    long = payload("x" * 14_000)
    assert long.folded and long.size == "14 KB" and long.lines == 1
    assert not payload("x" * FOLD_CHARS).folded
    assert payload(None).empty and payload("").empty


def test_json_payloads_are_pretty_printed_even_when_stored_as_a_string() -> None:
    shown = payload('{"city": "Paris", "days": [1, 2]}')
    text = re.sub(r"<[^>]+>", "", shown.html)
    assert '"city": "Paris"' in text and '\n  "days": [\n    1,' in text


def test_code_in_an_input_keeps_its_lines() -> None:
    shown = payload({"code": "import numpy\nprint(1)", "language": "python"})
    assert '<dt>code</dt><dd><span class="kv-string">import numpy\nprint(1)</span>' in shown.html
    assert shown.lines == 5 and not shown.folded
    one_line = payload({"code": "print(1)"})
    assert "kv" not in one_line.html and '<pre class="hl">' in one_line.html


@pytest.mark.django_db
def test_a_long_result_folds_behind_show_with_its_size(viewer_client: Client) -> None:
    thread = make_thread("Big")
    make_run(
        thread,
        ("message", {"role": "assistant", "parts": [_call("c1", "fetch", {"url": "x"})]}),
        ("message", {"role": "tool", "parts": [_result("c1", "row\n" * 3000)]}),
    )
    html = viewer_client.get(f"/t/{thread.id}/").content.decode()
    assert (
        '<details class="tool-section tool-fold"><summary><span class="tool-label">Result' in html
    )
    assert "Show 12 KB result · 3,001 lines" in html or "Show 12 KB result · 3001 lines" in html
    # The input is short: open.
    assert '<div class="tool-section"><div class="tool-label">Input</div>' in html


def test_size_labels_read_like_a_file_manager() -> None:
    assert rendering.size_label(1) == "1 byte"
    assert rendering.size_label(612) == "612 bytes"
    assert rendering.size_label(1434) == "1.4 KB"
    assert rendering.size_label(14 * 1024) == "14 KB"
    assert rendering.size_label(int(3.1 * 1024 * 1024)) == "3.1 MB"


# --- data-* and system.* --------------------------------------------------------------------


def test_data_renders_as_nested_key_value_lists() -> None:
    view = annotation_view(
        {"seq": 4, "kind": "data-weather",
         "data": {"city": "Paris", "hours": [7, 8], "wind": {"speed": 12, "gusts": None}}}
    )  # fmt: skip
    assert view.kind == "data-weather" and view.label == "data" and not view.size
    html = str(view.html)
    assert (
        '<dl class="kv"><div class="kv-row"><dt>city</dt><dd><span class="kv-string">Paris' in html
    )
    assert '<ol class="kv-list"><li><span class="kv-number">7</span></li>' in html
    assert '<dt>wind</dt><dd><dl class="kv">' in html and '<span class="kv-literal">null' in html


def test_system_actions_and_long_strings_and_big_data() -> None:
    view = annotation_view({"action_type": "system.handoff", "data": {"to": "critic"}})
    assert view.label == "system" and view.kind == "system.handoff"
    clipped = str(annotation_view({"kind": "data-log", "data": {"text": "y" * 500}}).html)
    assert '<details class="kv-clip"><summary><span class="kv-string">' + "y" * 160 in clipped
    assert "500 characters" in clipped
    big = annotation_view({"kind": "data-rows", "data": list(range(1000))})
    assert big.size and str(big.html).count("<li>") <= rendering.DATA_VIEW_VALUES
    assert "more</li>" in str(big.html)


@pytest.mark.django_db
def test_the_conversation_shows_data_events_content_not_just_their_label(
    viewer_client: Client,
) -> None:
    thread = make_thread("Data")
    make_run(
        thread,
        ("text-delta", {"delta": "patched"}),
        ("data-diff", {"file": "dates.py", "added": 2, "removed": 9}),
    )
    html = viewer_client.get(f"/t/{thread.id}/").content.decode()
    assert '<code class="data-kind">data-diff</code>' in html
    assert '<dt>file</dt><dd><span class="kv-string">dates.py</span>' in html
    assert '<dt>removed</dt><dd><span class="kv-number">9</span>' in html


# --- hidden messages -----------------------------------------------------------------------


@pytest.mark.django_db
def test_consecutive_hidden_messages_become_one_group() -> None:
    hidden = {"hidden": True}
    items = _items(
        ("system", [{"type": "text", "text": "be brief"}], hidden),
        ("user", [{"type": "text", "text": "context"}], hidden),
        ("user", [{"type": "text", "text": "question"}], {}),
        ("assistant", [_call()], hidden),
        ("tool", [_result()], {}),
        ("assistant", [{"type": "reasoning", "text": "hmm"}], hidden),
        ("assistant", [{"type": "text", "text": "answer"}], {}),
    )
    assert [(i.hidden_group, i.hidden_group_end) for i in items] == [
        (2, False), (0, True), (0, False), (2, False), (0, False), (0, True), (0, False),
    ]  # fmt: skip
    assert items[0].hidden_group_summary == "system · user"
    assert items[3].hidden_group_summary == "lookup call · reasoning"
    assert items[4].folded  # inside the group, shown with its call


@pytest.mark.django_db
def test_a_hidden_run_renders_as_one_n_hidden_line(viewer_client: Client) -> None:
    thread = make_thread("Hidden")
    make_run(
        thread,
        _said("system", "s1", hidden=True),
        _said("system", "s2", hidden=True),
        _said("user", "u3", hidden=True),
        _said("user", "hello"),
    )
    html = viewer_client.get(f"/t/{thread.id}/").content.decode()
    assert html.count('<details class="hidden-group">') == 1
    assert "3 hidden messages" in html and "Hidden message" not in html
    start, hello = html.index('<details class="hidden-group">'), html.index(">hello</p>")
    group = html[start : html.index("</article>\n</details>", start)]
    assert all(f">{t}</p>" in group for t in ("s1", "s2", "u3")) and start + len(group) < hello


# --- files and inline images -----------------------------------------------------------------


def test_inline_raster_images_are_shown_and_nothing_else_is() -> None:
    shown = part_view({"type": "file", "mimeType": "image/png", "url": PNG})
    assert shown.preview_url == PNG and shown.name == "image"
    for url in (
        "data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+",
        "data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==",
        "data:image/avif;base64,AAAA",
        "data:image/png,<svg onload=alert(1)>",
        'data:image/png;base64,AAAA"><script>',
    ):
        view = part_view({"type": "file", "mimeType": "image/png", "url": url})
        assert view.preview_url == "" and view.url == "", url
        assert view.unavailable.startswith("inline"), url


def test_an_inline_image_over_two_megabytes_is_a_placeholder_with_its_size() -> None:
    data = base64.b64encode(b"\x89PNG" + b"\0" * (3 * 1024 * 1024)).decode()
    view = part_view(
        {"type": "file", "mimeType": "image/png", "url": f"data:image/png;base64,{data}"}
    )
    assert view.preview_url == ""
    assert view.unavailable == "inline, 3.0 MB: too large to show here"
    small = base64.b64encode(b"\x89PNG" + b"\0" * (1024 * 1024)).decode()
    assert part_view({"type": "file", "mimeType": "image/png",
                      "url": f"data:image/png;base64,{small}"}).preview_url  # fmt: skip


def test_a_file_kept_elsewhere_says_so_and_names_its_pointer() -> None:
    view = part_view({"type": "file", "mimeType": "image/*", "url": "file-service://file-Abc123"})
    assert view.url == "" and view.preview_url == ""
    assert view.unavailable == "not included in this transcript"
    assert view.reference == "file-service://file-Abc123"


def test_linked_images_are_placeholders_and_other_files_links() -> None:
    linked = part_view(
        {"type": "file", "mimeType": "image/png", "url": "https://example.com/a.png"}
    )
    assert linked.preview_url == "" and "image from <strong>example.com</strong>" in linked.html
    pdf = part_view({"type": "file", "mimeType": "application/pdf", "url": "https://e.com/a.pdf"})
    assert pdf.preview_url == "" and pdf.url == "https://e.com/a.pdf"


# --- a real ChatGPT import -------------------------------------------------------------------


@pytest.mark.django_db
def test_an_imported_chatgpt_thread_reads_cleanly(viewer_client: Client) -> None:
    interchange.import_data(json.loads(CHATGPT.read_text()), "chatgpt", project=default_project())
    thread = Thread.objects.get(title="Plotting a sine wave")
    html = viewer_client.get(f"/t/{thread.id}/").content.decode()
    assert "Hidden message" not in html and "inline data, not linked" not in html
    assert "shown with its call" not in html
    # sys + context, then reasoning recap + the python call: two lines, not four cards.
    assert html.count('<details class="hidden-group">') == 2
    assert '2 hidden messages <span class="muted">system · user</span>' in html
    assert '2 hidden messages <span class="muted">reasoning · python call</span>' in html
    # The printed output joined its call; the image's message keeps its card and says where
    # the image is.
    assert "&lt;Figure size 640x480 with 1 Axes&gt;" in html
    assert "not included in this transcript" in html and "file-service://file-Abc123" in html
    weather = Thread.objects.get(title="Weather today")
    html = viewer_client.get(f"/t/{weather.id}/").content.decode()
    assert html.count("<article") == 3  # question, the browser call (hidden), the answer
    assert "Error when fetching the second page." in html
    assert '<span class="tag tag-error">error</span>' in html


# --- safety --------------------------------------------------------------------------------


@pytest.mark.django_db
def test_hostile_data_tool_output_and_files_render_inert(viewer_client: Client) -> None:
    thread = make_thread("Hostile")
    hostile = dict.fromkeys(PAYLOADS, PAYLOADS)
    parts = [
        _call('"><script>', "<svg onload=alert(1)>", hostile),
        {"type": "file", "mimeType": "image/svg+xml", "name": "<img src=x onerror=alert(1)>",
         "url": "data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+"},
        {"type": "file", "mimeType": "text/html", "url": "data:text/html,<script>alert(1)</script>"
         },
        {"type": "file", "mimeType": "image/png", "url": "javascript:alert(1)//data:image/png"},
        {"type": "file", "mimeType": "image/png", "url": "x-evil://<script>alert(1)</script>"},
    ]  # fmt: skip
    make_run(
        thread,
        ("message", {"role": "assistant", "parts": parts}),
        ("text-delta", {"delta": "streamed"}),
        ("tool-result", {"toolCallId": '"><script>',
                         "output": "x" * 700 + "<script>alert(2)</script>"}),
        ("data-<img src=x onerror=alert(1)>", {"<script>": PAYLOADS, "deep": [[[{"a": "<b>"}]]]}),
        ("system.<svg>", {"note": "<iframe src=javascript:alert(1)>" * 50}),
    )  # fmt: skip
    html = viewer_client.get(f"/t/{thread.id}/").content.decode()
    _assert_inert(html, own_scripts=True)
    assert "&lt;script&gt;alert(2)&lt;/script&gt;" in html
    assert '<img src="data:' not in html
