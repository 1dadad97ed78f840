"""Hypothesis strategies for valid ThreadProtocol v1.0.0 threads, as other tools write them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from hypothesis import strategies as st

# Strings PostgreSQL can store (no NUL), so the same documents go through the database.
CHARS = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")
TEXT = st.text(CHARS, max_size=30)
NAMES = st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True)
JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53), max_value=2**53)
    | st.floats(allow_nan=False, allow_infinity=False, width=32)
    | TEXT,
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.text(CHARS, max_size=8), children, max_size=3)
    ),
    max_leaves=6,
)
JSON_OBJECTS = st.dictionaries(st.text(CHARS, max_size=8), JSON_VALUES, max_size=3)
ZONES = [UTC, timezone(timedelta(hours=2)), timezone(-timedelta(hours=5, minutes=30))]
UUIDS = st.uuids().map(str)


@st.composite
def stamps(draw: st.DrawFn, after: datetime) -> tuple[str, datetime]:
    """A timestamp not before after, spelled as writers do (Z or an offset, ms or µs or none)."""
    spec, step = draw(
        st.sampled_from([("seconds", 10**6), ("milliseconds", 1000), ("microseconds", 1)])
    )
    moment = after + timedelta(microseconds=draw(st.integers(0, 10**8)))
    # Cut to what the spelling shows, then round up so time never goes back.
    cut = moment.replace(microsecond=moment.microsecond // step * step)
    moment = cut if cut >= after else cut + timedelta(microseconds=step)
    zone = draw(st.sampled_from(ZONES))
    text = moment.astimezone(zone).isoformat(timespec=spec)
    if draw(st.booleans()):
        text = text.replace("+00:00", "Z")
    return text, moment


def _maybe(
    draw: st.DrawFn, target: dict[str, Any], key: str, values: st.SearchStrategy[Any]
) -> None:
    if draw(st.booleans()):
        target[key] = draw(values)


@st.composite
def content_items(draw: st.DrawFn, media: bool) -> dict[str, Any]:
    """A text item, or an image/file/audio/video item by URL or base64 data."""
    kinds = ["text", "image", "file", "audio", "video"] if media else ["text"]
    kind = draw(st.sampled_from(kinds))
    if kind == "text":
        item: dict[str, Any] = {"type": "text", "text": draw(TEXT)}
    else:
        item = {"type": kind}
        source = draw(st.sampled_from(["url", "image_url", "data", "image_base64", None]))
        if source in ("url", "image_url"):
            item[source] = f"https://example.com/{draw(NAMES)}"
        elif source is not None:
            item[source] = draw(st.from_regex(r"[A-Za-z0-9+/]{4,12}={0,2}", fullmatch=True))
        _maybe(draw, item, "media_type", st.sampled_from(["image/png", "application/pdf", ""]))
        _maybe(draw, item, "name", NAMES)
    _maybe(draw, item, "x_extra", JSON_VALUES)
    return item


def contents(media: bool) -> st.SearchStrategy[Any]:
    """Message content: a string or an array of content items."""
    return TEXT | st.lists(content_items(media), max_size=3)


@st.composite
def attachments(draw: st.DrawFn) -> dict[str, Any]:
    """An attachment by URL or by base64 data."""
    item: dict[str, Any] = {"name": draw(NAMES), "media_type": "application/pdf"}
    if draw(st.booleans()):
        item["url"] = f"https://example.com/{draw(NAMES)}"
    else:
        item["data"] = draw(st.from_regex(r"[A-Za-z0-9+/]{4,12}", fullmatch=True))
    _maybe(draw, item, "size_bytes", st.integers(0, 10**6))
    return item


@st.composite
def threadprotocol_threads(draw: st.DrawFn, max_actions: int = 10) -> dict[str, Any]:
    """A valid ThreadProtocol thread: every rule holds, every optional field may appear."""
    created_text, clock = draw(stamps(datetime(2024, 1, 1, tzinfo=UTC)))
    agent_keys = draw(st.lists(NAMES, min_size=1, max_size=3, unique=True))
    agents: dict[str, Any] = {}
    for key in agent_keys:
        config = {
            "agent_id": key,
            "agent_identifier": f"{key}_v1",
            "agent_name": draw(TEXT),
            "created_at": created_text,
        }
        _maybe(draw, config, "config_ref", NAMES)
        agents[key] = config
    ids = draw(st.sampled_from(["none", "uuid", "mixed"]))
    calls: list[tuple[str, str]] = []
    actions: list[dict[str, Any]] = []
    first = draw(st.sampled_from([1, 1, 0, 7]))
    kinds = [
        "user_message",
        "assistant_message",
        "thinking",
        "tool_call",
        "tool_return",
        "system.note",
        "system.prompt",
    ]
    for index in range(draw(st.integers(0, max_actions))):
        text, clock = draw(stamps(clock))
        kind = draw(st.sampled_from(kinds))
        if kind == "tool_return" and not calls:
            kind = "user_message"
        action: dict[str, Any] = {"action_type": kind, "timestamp": text, "sequence": first + index}
        agent = draw(st.sampled_from(agent_keys))
        if kind == "user_message":
            action["content"] = draw(contents(media=True))
            _maybe(draw, action, "attachments", st.lists(attachments(), max_size=2))
        elif kind == "assistant_message":
            action.update(agent_id=agent, content=draw(contents(media=False)))
            _maybe(
                draw,
                action,
                "finish_reason",
                st.sampled_from(["stop", "tool_call", "length", None]),
            )
            if draw(st.booleans()):
                usage = {
                    "input_tokens": draw(st.integers(0, 999)),
                    "output_tokens": draw(st.integers(0, 999)),
                }
                _maybe(draw, usage, "total_tokens", st.integers(0, 2000))
                action["usage"] = usage
        elif kind == "thinking":
            action.update(
                agent_id=agent, provider_name=draw(st.sampled_from(["anthropic", "openai"]))
            )
            _maybe(draw, action, "content", TEXT)
            _maybe(draw, action, "signature", NAMES)
            _maybe(draw, action, "thinking_id", NAMES)
            _maybe(
                draw,
                action,
                "usage",
                st.fixed_dictionaries({"thinking_tokens": st.integers(0, 99)}),
            )
        elif kind == "tool_call":
            call_id = f"call_{len(calls)}_{draw(NAMES)}"
            name = draw(NAMES)
            calls.append((call_id, name))
            action.update(
                agent_id=agent, tool_name=name, tool_call_id=call_id, args=draw(JSON_VALUES)
            )
        elif kind == "tool_return":
            call_id, name = draw(st.sampled_from(calls))
            action.update(
                tool_call_id=call_id,
                tool_name=name,
                status=draw(st.sampled_from(["success", "error", "validation_error"])),
                content=draw(JSON_VALUES),
            )
        elif kind == "system.prompt":
            action["data"] = draw(
                TEXT
                | st.fixed_dictionaries({"content": TEXT}, optional={"x": NAMES})
                | JSON_OBJECTS
            )
        else:
            action["data"] = draw(JSON_VALUES)
            if draw(st.booleans()):
                action["data"] = {"agent_id": agent}
        if ids == "uuid" or (ids == "mixed" and draw(st.booleans())):
            action["action_id"] = draw(UUIDS | NAMES) if ids == "mixed" else draw(UUIDS)
        _maybe(draw, action, "metadata", JSON_OBJECTS)
        actions.append(action)
    updated_text, _ = draw(stamps(clock))
    thread: dict[str, Any] = {
        "version": "1.0.0",
        "thread_id": draw(UUIDS | NAMES),
        "created_at": created_text,
        "updated_at": updated_text,
        "title": draw(TEXT),
        "agents": agents,
        "actions": actions,
    }
    _maybe(draw, thread, "parent_thread_id", UUIDS | st.none())
    _maybe(
        draw,
        thread,
        "metadata",
        st.none() | JSON_OBJECTS | st.fixed_dictionaries({"extra": JSON_VALUES}),
    )
    _maybe(draw, thread, "x_vendor", JSON_VALUES)
    return thread
